"""The link state machine: a link's states, the allowed transitions, and the one way to change
a link's state, a conditional update ("from one of these states to that one"), so a change that
lost a race (the stream supervisor failing the link while a user pauses it, say) is refused or
skipped instead of overwriting the other.

User changes (pause, resume) live in `links.py`; the changes the system makes on its own (the
availability check, the stream supervisor) go through `system_change`, which records them."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from replication.core.errors import conflict
from replication.governance import audit
from replication.models import ClusterLink
from replication.states.mirror_states import Transition

log = logging.getLogger(__name__)
State = ClusterLink.State

TRANSITIONS: dict[str, Transition] = {
    "pause": Transition(
        frozenset({State.ACTIVE, State.UNAVAILABLE, State.FAILED}),
        frozenset({State.PAUSED}),
        "paused",
    ),
    "resume": Transition(
        frozenset({State.PAUSED, State.FAILED}), frozenset({State.ACTIVE}), "resumed"
    ),
    # the availability check: the source stopped answering, and answers again
    "source-lost": Transition(
        frozenset({State.ACTIVE}), frozenset({State.UNAVAILABLE}), "marked unavailable"
    ),
    "source-back": Transition(
        frozenset({State.UNAVAILABLE}), frozenset({State.ACTIVE}), "marked available"
    ),
    # the stream supervisor: the link's stream keeps failing
    "fail": Transition(frozenset({State.ACTIVE}), frozenset({State.FAILED}), "failed"),
}


# What to do instead, where a refused change has a plain answer.
_INSTEAD: dict[tuple[str, str], str] = {
    ("resume", State.ACTIVE): " It is running already: there is nothing to resume.",
    ("resume", State.UNAVAILABLE): (
        " Its source does not answer: it is ACTIVE again by itself once the source answers"
        " (the availability check tries every few seconds). Pause it to stop trying."
    ),
}


def _changed(link: ClusterLink, event: str, to: str, fields: dict) -> bool:
    transition = TRANSITIONS[event]
    if to not in transition.targets:
        raise ValueError(f"{event} cannot lead to {to}; allowed: {sorted(transition.targets)}")
    now = timezone.now()
    found = ClusterLink.objects.filter(pk=link.pk, state__in=transition.sources)
    if not found.update(state=to, state_time=now, **fields):
        return False
    link.state, link.state_time = to, now
    for name, value in fields.items():
        setattr(link, name, value)
    return True


def move(link: ClusterLink, event: str, to: str, **fields) -> None:
    """Change the link's state by `event` (and set `fields` with it), only if it is still in a
    state `event` starts from; otherwise refuse, saying what it is now."""
    if not _changed(link, event, to, fields):
        current = ClusterLink.objects.filter(pk=link.pk).values_list("state", flat=True).first()
        if current is None:
            raise conflict(f"Cluster link {link.name!r} was deleted meanwhile.")
        link.state = current
        raise conflict(
            f"Cluster link {link.name!r} is {current}; it cannot be {TRANSITIONS[event].verb} "
            f"from that state.{_INSTEAD.get((event, current), '')}"
        )


def system_change(
    link: ClusterLink,
    event: str,
    to: str,
    *,
    by: str,
    action: str,
    message: str = "",
    failed: bool = False,
    then: Callable[[ClusterLink], object] | None = None,
    **fields,
) -> bool:
    """A change the system makes on its own (by `by`): the link moved by `event` where it still
    may be, `then` (its mirrors following) in the same transaction, logged and audited as
    `action`. Returns whether it changed; a link in another state is left as it is."""
    with transaction.atomic():
        changed = _changed(link, event, to, fields)
        if changed:
            if then is not None:
                then(link)
            # In the same transaction: whoever sees the new state sees its audit event too.
            audit.record(
                audit.Actor.system(by),
                action,
                f"link {link.name}",
                result=audit.AuditEvent.Result.FAILED if failed else audit.AuditEvent.Result.OK,
                message=message,
            )
    if changed:
        level = logging.ERROR if failed else logging.INFO
        log.log(level, "Cluster link %s is %s%s", link.name, to, f": {message}" if message else "")
    return changed
