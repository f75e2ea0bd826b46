"""Who did what: every mutating action writes one AuditEvent through `record`.

An action whose event cannot be written is refused: `refusals`, which wraps every user
action, first proves that the trail takes a write (inside a savepoint that is rolled back)
and refuses before anything is changed when it does not. An event that still fails to be
written afterwards (the trail broke mid-action) is logged in full at CRITICAL, so it is not
lost, and the caller is told.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction
from django.db.models import Q, QuerySet

from replication.core.errors import ReplicationError
from replication.models import AuditEvent

# An event's id as a page cursor: ASCII digits, few enough for a 64-bit integer.
_EVENT_ID = re.compile(r"[0-9]{1,18}")

log = logging.getLogger(__name__)
# The note of an action an admin took at once in a disaster, without approval (a failover):
# its events are flagged `break_glass`, a filter of the trail.
BREAK_GLASS = "BREAK GLASS: "


class AuditUnavailable(ReplicationError):
    def __init__(self, changed: bool):
        outcome = (
            "The action was done, but its audit event is only in the console's log."
            if changed
            else "The action was refused; nothing was changed."
        )
        super().__init__(
            "The audit trail could not be written: the database refused the write (the "
            f"console's log says why). {outcome} Ask an administrator to check the console's "
            "database, then try again.",
            503,
        )


class _Rollback(Exception):
    pass


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
        """Isthmus itself, at work named `name`: "system (promote)"."""
        return cls(name=f"system ({name})")

    @classmethod
    def of_user(cls, user_pk: int) -> Actor:
        """The user behind work done later, in a task (a scenario run they started)."""
        user = get_user_model().objects.get(pk=user_pk)
        return cls(user=user, name=user.get_username())


def record(
    actor: Actor,
    action: str,
    target: str,
    *,
    result: str = AuditEvent.Result.OK,
    before: dict | None = None,
    after: dict | None = None,
    message: str = "",
    in_change: bool = False,
    topics: Iterable[str] = (),
) -> AuditEvent:
    """Write one event. `in_change`: the caller writes it inside the transaction of the change
    itself, so that if it cannot be written the change is undone too. The mirror topics it
    concerns are `topics` with those it names itself: a target `mirror NAME`, a `topics` list
    before or after (a request's)."""
    event = AuditEvent(
        actor=actor.user,
        actor_name=_fit("actor_name", actor.name),
        address=_ip_address(actor.address),
        user_agent=_fit("user_agent", actor.user_agent),
        action=_fit("action", action),
        target=_fit("target", target),
        before=before,
        after=after,
        result=result,
        message=_fit("message", message),
        topics="\n".join(_concerned(topics, target, before, after)),
        break_glass=message.startswith(BREAK_GLASS),
    )
    try:
        with transaction.atomic():
            event.save()
    except DatabaseError as exc:
        log.critical(
            "Could not write the audit event %s by %r on %s (%s, before %s, after %s, %s): %s",
            action,
            actor.name,
            target,
            result,
            before,
            after,
            message,
            exc,
        )
        changed = result == AuditEvent.Result.OK and not in_change
        raise AuditUnavailable(changed=changed) from exc
    return event


def _concerned(topics: Iterable[str], target: str, before, after) -> list[str]:
    found = list(topics)
    if target.startswith("mirror "):  # "mirror orders", "mirror orders on link ab"
        found.append(target.split(" ")[1])
    for side in (before, after):
        if isinstance(side, dict) and isinstance(side.get("topics"), list):
            found += [t for t in side["topics"] if isinstance(t, str)]
    return list(dict.fromkeys(found))


def _fit(field: str, text: str) -> str:
    """`text` as the event's column takes it, where SQLite would keep anything but PostgreSQL
    refuses the row, and with it the action: a NUL character spelt out, and a text longer than
    the column (a refused 5,000-character name, a mirror of a 249-character topic on a
    200-character link) cut to its start and end around a '…'."""
    text = text.replace("\x00", "\\x00")
    limit = AuditEvent._meta.get_field(field).max_length  # type: ignore[union-attr]
    if limit is None or len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head) :]}"


def _ip_address(address: str | None) -> str | None:
    """The caller's address when it is one (PostgreSQL's inet column refuses anything else)."""
    try:
        return str(ipaddress.ip_address(address)) if address else None
    except ValueError:
        return None


def refused(actor: Actor, action: str, target: str, message: str) -> None:
    """Record a refusal at the door (the policy, bad credentials). The refusal stands even when
    the trail cannot be written: `record` has logged the event in full then."""
    with contextlib.suppress(AuditUnavailable):
        record(actor, action, target, result=AuditEvent.Result.REFUSED, message=message)


def ensure_writable() -> None:
    """Refuse, before anything changes, when the trail does not take a write now."""
    try:
        with transaction.atomic():
            AuditEvent(actor_name="", action="audit.probe", target="").save()
            raise _Rollback
    except _Rollback:
        return
    except DatabaseError as exc:
        log.critical("The audit trail does not take writes, so actions are refused: %s", exc)
        raise AuditUnavailable(changed=False) from exc


@contextmanager
def refusals(actor: Actor, action: str, target: str) -> Iterator[None]:
    """Run a user action: refused at once if the trail cannot be written, and a refusal (a
    ReplicationError) audited before it reaches the caller."""
    ensure_writable()
    try:
        yield
    except AuditUnavailable:
        raise
    except ReplicationError as exc:
        result = AuditEvent.Result.FAILED if exc.status == 503 else AuditEvent.Result.REFUSED
        record(actor, action, target, result=result, message=str(exc))
        raise


# Reading the trail. ------------------------------------------------------------------------


def search(
    *,
    actor: str = "",
    target: str = "",
    action: str = "",
    result: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    topic: str = "",
    break_glass: bool = False,
) -> QuerySet[AuditEvent]:
    """Events newest first: actor, target and a topic they concern by a part of them (any
    case), action and result exactly, time from `since` up to (not including) `until`, only
    those that broke glass if `break_glass`."""
    events = AuditEvent.objects.all()
    if actor:
        events = events.filter(actor_name__icontains=actor)
    if target:
        events = events.filter(target__icontains=target)
    if topic:
        events = events.filter(topics__icontains=topic)
    if break_glass:
        events = events.filter(break_glass=True)
    if action:
        events = events.filter(action=action)
    if result:
        events = events.filter(result=result)
    if since is not None:
        events = events.filter(at__gte=since)
    if until is not None:
        events = events.filter(at__lt=until)
    return events.order_by("-at", "-id")


def actions() -> list[str]:
    """The actions the trail holds, for a filter to offer."""
    return list(AuditEvent.objects.order_by("action").values_list("action", flat=True).distinct())


def page(
    events: QuerySet[AuditEvent], *, before: str | None, after: str | None, size: int = 100
) -> tuple[list[AuditEvent], bool, bool]:
    """One page of `events` (newest first): those older than event `before`, or newer than
    event `after`, or the newest. Keyset paging on (time, id): no count, and new events do
    not shift the page being read. Returns the page, and whether there are older and newer
    events."""
    if after_event := _event(after):  # going back towards the newest
        newer = Q(at__gt=after_event.at) | Q(at=after_event.at, pk__gt=after_event.pk)
        rows = list(events.filter(newer).order_by("at", "id")[: size + 1])
        return list(reversed(rows[:size])), True, len(rows) > size
    if before_event := _event(before):
        older = Q(at__lt=before_event.at) | Q(at=before_event.at, pk__lt=before_event.pk)
        rows = list(events.filter(older)[: size + 1])
        return rows[:size], len(rows) > size, True
    rows = list(events[: size + 1])
    return rows[:size], len(rows) > size, False


def _event(pk: str | None) -> AuditEvent | None:
    """The event a page starts after (or ends before); None for a missing or unknown one."""
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
    if not pk or not _EVENT_ID.fullmatch(pk):
        return None
    return AuditEvent.objects.filter(pk=int(pk)).only("pk", "at").first()
