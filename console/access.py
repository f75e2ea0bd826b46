"""The access policy at the console's door: every view is wrapped in `require(action)` or
marked `public`; a test checks that no URL escapes this. Who may do what is decided in
`replication.governance.policy`, for the console, the API, the CLI and the approval rules alike.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial, wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from replication.actions.approvals import pending_count
from replication.governance import audit, notifications
from replication.governance.policy import EVERYONE, POLICY, ROLES, can, roles_of

__all__ = [
    "CHOOSING_PASSWORD",
    "EVERYONE",
    "POLICY",
    "ROLES",
    "can",
    "context",
    "public",
    "require",
    "roles_of",
    "while_choosing_password",
]

# Session key: signed in with a one-time password, so only the page that replaces it opens.
CHOOSING_PASSWORD = "choosing_password"  # noqa: S105 (a session key)


def require(action: str) -> Callable:
    """Let the view run only for users whose role allows `action`."""
    if action not in POLICY:
        raise KeyError(f"Unknown action {action!r}; add it to console.access.POLICY.")

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                if getattr(request, "htmx", False):
                    # An expired session during an HTMX poll: send the whole page to login.
                    current = request.htmx.current_url_abs_path or "/"
                    return HttpResponseClientRedirect(redirect_to_login(current).url)
                return redirect_to_login(request.get_full_path())
            if request.session.get(CHOOSING_PASSWORD) and not hasattr(view, "while_choosing"):
                if getattr(request, "htmx", False):
                    return HttpResponseClientRedirect(reverse("account-password"))
                return redirect("account-password")
            if not can(request.user, action):
                if request.method == "POST":  # a refused change is audited like any other
                    audit.refused(
                        audit.Actor.from_request(request),
                        action,
                        request.path,
                        f"Your role does not allow {action}.",
                    )
                raise PermissionDenied(f"Your role does not allow {action}.")
            return view(request, *args, **kwargs)

        wrapper.access_action = action
        return wrapper

    return decorate


def while_choosing_password(view):
    """Mark a view as open to a user who signed in with a one-time password (the page where
    they choose their own); every other view sends them there first."""
    view.while_choosing = True
    return view


def public(view):
    """Mark a view as open to anyone (login page, health check)."""
    view.access_action = "public"
    return view


def context(request) -> dict:
    """Template context: what the current user may do, e.g. `allowed.cluster_register`, and
    how many approval requests wait and how many of the user's notifications are unread (for
    the navigation bar)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    roles = roles_of(user)
    # Counted when a template shows them (the navigation bar), once: a fragment or an error
    # page does not ask (a template calls a callable it is given).
    return {
        "allowed": {a.replace(".", "_"): bool(roles & POLICY[a]) for a in POLICY},
        "pending_approvals": cache(pending_count),
        "unread_notifications": cache(partial(notifications.unread, user)),
    }
