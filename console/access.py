"""The access policy: one place that decides who may do what, for the UI, API and CLI alike.

Roles are Django groups. Every view is wrapped in `require(action)` or marked `public`;
a test checks that no URL escapes this.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django_htmx.http import HttpResponseClientRedirect

ROLES = ("viewer", "operator", "approver", "admin")
EVERYONE = frozenset(ROLES)

# action -> the roles that may perform it
POLICY: dict[str, frozenset[str]] = {
    "console.view": EVERYONE,
    "cluster.register": frozenset({"admin"}),
    # create links, change their configs, pause and resume them
    "link.manage": frozenset({"operator", "admin"}),
    "link.delete": frozenset({"admin"}),
    # create mirror topics, pause and resume them
    "mirror.manage": frozenset({"operator", "admin"}),
    "mirror.delete": frozenset({"admin"}),
    # make and revoke one's own API tokens
    "token.manage": EVERYONE,
}


def roles_of(user) -> frozenset[str]:
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return EVERYONE
    return frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))


def can(user, action: str) -> bool:
    return bool(roles_of(user) & POLICY[action])


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
            if not can(request.user, action):
                raise PermissionDenied(f"Your role does not allow {action}.")
            return view(request, *args, **kwargs)

        wrapper.access_action = action
        return wrapper

    return decorate


def public(view):
    """Mark a view as open to anyone (login page, health check)."""
    view.access_action = "public"
    return view


def context(request) -> dict:
    """Template context: what the current user may do, e.g. `allowed.cluster_register`."""
    user = getattr(request, "user", None)
    if user is None:
        return {}
    roles = roles_of(user)
    return {"allowed": {a.replace(".", "_"): bool(roles & POLICY[a]) for a in POLICY}}
