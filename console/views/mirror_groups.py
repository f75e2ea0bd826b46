"""A mirror's consumer groups, the section its page loads on its own (HTMX): read from both
clusters when asked, so the page itself never waits for them."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from console.access import require
from console.views.mirrors import find_mirror
from replication.topics import mirror_groups


@require("console.view")
@require_GET
def mirror_groups_section(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return render(
        request,
        "mirrors/_groups.html",
        {"mirror": mirror, "found": mirror_groups.mirror_groups(mirror)},
    )
