"""How pages run a state change: a confirmation page first (GET), the change on POST, the
outcome as a flash message. Refusals show the domain's own message."""

from django.contrib import messages
from django.http import HttpRequest, QueryDict
from django.shortcuts import redirect, render

from console.forms import ConfirmForm
from replication import audit
from replication.errors import ReplicationError


def bound(request: HttpRequest) -> QueryDict | None:
    """A form's data: the POST's even when empty, so that an empty POST comes back with what
    is missing instead of as a blank form saying nothing; None (a blank form) otherwise."""
    return request.POST if request.method == "POST" else None


def form_errors(form) -> str:
    """A bound, invalid form's errors in one line, each named by its field's label."""
    return " ".join(
        f"{form.fields[name].label or name.replace('_', ' ').capitalize()}: {error}"
        if name in form.fields
        else error
        for name, errors in form.errors.items()
        for error in errors
    )


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
    typed: str = "",
):
    """GET asks `question`; POST calls `run(actor, force)` and goes to `after_url` on success,
    else back to `back_url`. With `typed` (for what cannot be undone), the user must type it
    (the object's name) before anything happens."""
    if request.method == "POST":
        if typed and request.POST.get("confirm_name", "").strip() != typed:
            messages.error(request, f"Type {typed} to confirm; nothing was changed.")
            return redirect(request.path)
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
            "typed": typed,
        },
    )
