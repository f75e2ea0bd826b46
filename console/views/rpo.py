"""A link's RPO target, set from its page (the form is on the link's page)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect

from console.access import require
from console.views.links import find_link, link_url
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.observe import rpo


@require("link.manage")
def link_rpo_target(request, destination, name):
    link = find_link(destination, name)
    if request.method != "POST":
        return redirect(link_url(link))
    try:
        seconds = rpo.parse_target(request.POST.get("rpo_target_seconds", ""))
        rpo.set_target(audit.Actor.from_request(request), link, seconds)
    except ReplicationError as exc:
        messages.error(request, str(exc))
    else:
        said = f"{seconds} s" if seconds else "none"
        messages.success(request, f"Set the RPO target of link {link.name}: {said}.")
    return redirect(link_url(link))
