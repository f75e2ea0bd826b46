"""The Data plane page: the engines that copy the links' mirrors (the console's own, and each
network zone's), their copier slots, which link's partitions each slot holds, their pace,
queues and errors."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from console.access import require
from replication.engine import status


@require("console.view")
@require_GET
def data_plane(request):
    engines = [(name, status.engine_status(name)) for name in status.engine_names()]
    return render(request, "data_plane.html", {"engines": engines})
