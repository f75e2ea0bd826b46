"""A link's schema sync on the console: a sync now, and synced subjects made writable on the
destination (subject to the link's approval policy)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.forms.links import PromoteSubjectsForm
from console.views.actions import bound
from console.views.approvals import after_asking
from console.views.links import find_link
from replication.actions import approvals
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.schemas import schema_links


@require("link.manage")
def link_schemas_sync(request, destination, name):
    link = find_link(destination, name)
    if request.method == "POST":  # the button is on the link's page
        try:
            schema_links.sync_soon(audit.Actor.from_request(request), link)
        except ReplicationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, f"Schemas of link {link.name}: a sync starts within a second."
            )
    return redirect("link-detail", destination, name)


@require("mirror.stop")
def link_schemas_promote(request, destination, name):
    link = find_link(destination, name)
    form = PromoteSubjectsForm(bound(request))
    if request.method == "POST" and form.is_valid():
        try:
            submission = approvals.submit(
                audit.Actor.from_request(request),
                link,
                approvals.Action.PROMOTE_SUBJECTS,
                reason=form.cleaned_data["reason"],
                params={"subjects": form.cleaned_data["subjects"]},
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            if submission.request is None:
                messages.success(request, "The subjects are writable on the destination now.")
                return redirect("link-detail", destination, name)
            done = reverse("link-detail", args=[destination, name])
            return after_asking(request, submission, done, "making schema subjects writable")
    return render(
        request,
        "links/promote_subjects.html",
        {"form": form, "link": link, "acts_at_once": approvals.acts_at_once(request.user, link)},
        status=400 if request.method == "POST" else 200,
    )
