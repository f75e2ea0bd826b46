"""A mirror compared with its source on demand: the form, and the verification's page with its
live progress (the background verification shows on the mirror's own page)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.forms.mirrors import VerifyForm
from console.views.actions import bound
from console.views.mirrors import find_mirror, mirror_url
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.observe import mirror_differences, verification_requests


@require("mirror.manage")
def mirror_verify(request, destination, topic):
    mirror = find_mirror(destination, topic)
    form = VerifyForm(bound(request))
    if request.method == "POST" and form.is_valid():
        try:
            found = verification_requests.start(
                audit.Actor.from_request(request),
                mirror,
                form.cleaned_data["from_offset"],
                form.cleaned_data["to_offset"],
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Verifying mirror topic {mirror.mirror_topic}.")
            return redirect(
                reverse("mirror-verification", args=[destination, mirror.mirror_topic, found.pk])
            )
    return render(request, "mirrors/verify.html", {"mirror": mirror, "form": form})


@require("console.view")
def mirror_verification(request, destination, topic, pk):
    mirror = find_mirror(destination, topic)
    try:
        found = verification_requests.get(mirror, pk)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc
    template = "mirrors/verification.html"
    return render(
        request,
        f"{template}#progress" if request.htmx else template,
        {
            "mirror": mirror,
            "found": found,
            "outcome": verification_requests.outcome(found),
            "differences": mirror_differences.differences(found),
            "back_url": mirror_url(mirror),
        },
    )
