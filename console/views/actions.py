"""How pages run a state change: a confirmation page first (GET), the change on POST, the
outcome as a flash message. Refusals show the domain's own message."""

from django.contrib import messages
from django.http import HttpRequest, QueryDict
from django.shortcuts import redirect, render

from console.forms.common import ConfirmForm
from replication.core.errors import ReplicationError
from replication.governance import audit


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
    verb: str,
    explanation: str,
    run,
    done: str,
    back_url: str,
    after_url: str | None = None,
    typed: str = "",
    undo: str = "",
):
    """GET asks `question`, answered by a button "Yes, <verb> it"; POST calls `run(actor)`
    and goes to `after_url` on success, else back to `back_url`. With `typed` (for what cannot
    be undone, or is undone otherwise than by a click: `undo` says how), the user must type it
    (the object's name) before anything happens."""
    form = ConfirmForm(bound(request), name=typed, undo=undo)
    if request.method == "POST":
        if not form.is_valid():  # the name mistyped: the only thing a yes can get wrong
            messages.error(request, " ".join(str(e) for e in form.errors["confirm_name"]))
            return redirect(request.path)
        ok = act(request, run, done)
        return redirect(after_url if ok and after_url else back_url)
    return render(
        request,
        "confirm.html",
        {
            "question": question,
            "answer": f"Yes, {verb} it",
            "explanation": explanation,
            "cancel_url": back_url,
            "form": form,
        },
    )
