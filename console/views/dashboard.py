"""The home page: the state of every link at a glance, what needs attention first."""

from django.shortcuts import render

from console.access import require
from replication.dashboard import overview


@require("console.view")
def dashboard(request):
    template = "dashboard.html#live" if request.htmx else "dashboard.html"
    return render(request, template, {"overview": overview()})
