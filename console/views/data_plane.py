"""The Data plane page: the engine that copies every link's mirrors, its copier slots, which
link's partitions each slot holds, their pace, queues and errors."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from console.access import require
from replication.engine import status


@require("console.view")
@require_GET
def data_plane(request):
    return render(request, "data_plane.html", {"engine": status.engine_status()})
