"""The home page: the state of every link at a glance, what needs attention first."""

from django.shortcuts import render

from console.access import require
from console.views.links import with_source_names
from replication.overview.dashboard import overview


@require("console.view")
def dashboard(request):
    template = "dashboard.html#live" if request.htmx else "dashboard.html"
    found = overview()
    with_source_names([s.link for s in found.links])
    return render(request, template, {"overview": found})
