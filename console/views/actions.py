"""How pages run a state change: a confirmation page first (GET), the change on POST, the
outcome as a flash message. Refusals show the domain's own message."""

from django.contrib import messages
from django.shortcuts import redirect, render

from console.forms import ConfirmForm
from replication import audit
from replication.errors import ReplicationError


def act(request, operation, success: str) -> bool:
    """Run `operation(actor)`; flash its outcome."""
    try:
        operation(audit.Actor.from_request(request))
    except ReplicationError as exc:
        messages.error(request, str(exc))
        return False
    messages.success(request, success)
    return True


def confirm(
    request,
    *,
    question: str,
    explanation: str,
    run,
    done: str,
    back_url: str,
    after_url: str | None = None,
    offer_force: bool = False,
):
    """GET asks `question`; POST calls `run(actor, force)` and goes to `after_url` on success,
    else back to `back_url`."""
    if request.method == "POST":
        form = ConfirmForm(request.POST)
        force = form.is_valid() and form.cleaned_data["force"]
        ok = act(request, lambda actor: run(actor, force), done)
        return redirect(after_url if ok and after_url else back_url)
    return render(
        request,
        "confirm.html",
        {
            "question": question,
            "explanation": explanation,
            "offer_force": offer_force,
            "cancel_url": back_url,
        },
    )
