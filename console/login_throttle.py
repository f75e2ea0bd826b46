"""Login throttling (django-axes): after AXES_FAILURE_LIMIT failed logins for one user name,
or from one address, that name or address is refused for AXES_COOLOFF_TIME (settings); every
failed login is audited.

The JSON API needs none of this: it takes API tokens only (256 random bits, not guessable),
never an account's password.
"""

from __future__ import annotations

import math

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from replication.governance import audit


class ThrottlingBackend(AxesStandaloneBackend):
    """Refuses a locked-out user name or address before the password is checked.

    A call to `authenticate()` without a request (the test client's `login()`, a management
    command) comes from this machine, not from someone guessing at the login page: it is
    not throttled, where axes' own backend would raise.
    """

    def authenticate(self, request: HttpRequest | None, *args, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def client_address(request: HttpRequest) -> str | None:
    """The address a failed login is counted against: the one the audit trail records. Behind
    a reverse proxy that is the proxy's (see docs/operations.md)."""
    return request.META.get("REMOTE_ADDR")


def lockout_message() -> str:
    minutes = math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    return (
        "Too many failed logins for this account or address; try again in "
        f"{minutes} minute{'s' if minutes != 1 else ''} or ask an admin to unlock it."
    )


class _LockedOutForm(AuthenticationForm):
    """The login form as typed, with the lockout as its one error. Its check must not run:
    that would try the password again (and count another failure)."""

    def full_clean(self) -> None:
        self.cleaned_data = {}
        self._errors = ErrorDict()
        self.add_error(None, lockout_message())


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials=None
) -> HttpResponse:
    """The login page again, saying in plain words why the login was refused (HTTP 429)."""
    context = {"form": _LockedOutForm(request, data=request.POST), "next": request.POST.get("next")}
    return render(request, "registration/login.html", context, status=429)


@receiver(user_login_failed, dispatch_uid="console.login_throttle.audit_failed_login")
def audit_failed_login(sender, credentials: dict, request: HttpRequest | None = None, **kwargs):
    """Every failed login goes to the audit trail, by the name it claimed, from where."""
    username = str(credentials.get("username", ""))
    if getattr(request, "axes_locked_out", False):
        message = f"Locked out: {lockout_message()}"
    else:
        message = "Wrong user name or password."
    meta = request.META if request is not None else {}
    audit.refused(
        audit.Actor(
            name=f"{username} (not authenticated)"[:150],
            address=meta.get("REMOTE_ADDR"),
            user_agent=meta.get("HTTP_USER_AGENT", "")[:400],
        ),
        "account.login",
        "console",
        message,
    )
