"""Who did what: every mutating action writes one AuditEvent through `record`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .errors import ReplicationError
from .models import AuditEvent


@dataclass(frozen=True)
class Actor:
    """The person (or system part) behind an action, with where the request came from."""

    user: Any = None
    name: str = ""
    address: str | None = None
    user_agent: str = ""

    @classmethod
    def from_request(cls, request) -> Actor:
        name = request.user.get_username() if request.user.is_authenticated else ""
        token = getattr(request, "api_token", None)
        if token is not None:  # say which of the user's tokens made the call
            name = f"{name} (API token {token.name!r})"
        return cls(
            user=request.user if request.user.is_authenticated else None,
            name=name[:150],
            address=request.META.get("REMOTE_ADDR"),
            user_agent=request.META.get("HTTP_USER_AGENT", "")[:400],
        )

    @classmethod
    def system(cls, name: str) -> Actor:
        return cls(name=name)


def record(
    actor: Actor,
    action: str,
    target: str,
    *,
    result: str = AuditEvent.Result.OK,
    before: dict | None = None,
    after: dict | None = None,
    message: str = "",
) -> AuditEvent:
    return AuditEvent.objects.create(
        actor=actor.user,
        actor_name=actor.name,
        address=actor.address,
        user_agent=actor.user_agent,
        action=action,
        target=target,
        before=before,
        after=after,
        result=result,
        message=message,
    )


@contextmanager
def refusals(actor: Actor, action: str, target: str) -> Iterator[None]:
    """Audit a refused operation (a ReplicationError) before it reaches the caller."""
    try:
        yield
    except ReplicationError as exc:
        result = AuditEvent.Result.FAILED if exc.status == 503 else AuditEvent.Result.REFUSED
        record(actor, action, target, result=result, message=str(exc))
        raise
