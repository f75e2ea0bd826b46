"""The mirror state machine: the states of a mirror topic, their groups, the allowed
transitions, and the one way to change a mirror's state.

Every state change is a conditional update ("from one of these states to that one"), so two
changes racing for one mirror cannot overwrite each other: the one that lost is refused with
a message saying what the mirror became meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils import timezone

from replication.core.errors import conflict
from replication.models import ClusterLink, MirrorTopic

State = MirrorTopic.State

# A mirror that follows its source, or would but for a pause or an outage.
FOLLOWING = frozenset({State.ACTIVE, State.PAUSED, State.LINK_PAUSED, State.SOURCE_UNAVAILABLE})
# Mirrors whose source partitions and configs the syncers follow (their link being ACTIVE).
SYNCED = frozenset({State.ACTIVE, State.PAUSED})
# The link's stream copies these (a reverse's mirror up to its source's fence).
COPYING = frozenset({State.ACTIVE, State.PENDING_SYNCHRONIZE})
# Mirrors leaving the link: `kafka-mirrors --describe --pending-stopped-only` shows them.
STOPPING = frozenset({State.PENDING_STOPPED, State.STOPPED})
# A promote needs the source to measure the lag, so not SOURCE_UNAVAILABLE; a failover works
# from any state a mirror can be stuck in.
PROMOTABLE = frozenset({State.ACTIVE, State.PAUSED, State.LINK_PAUSED})
FAILABLE_OVER = FOLLOWING | {State.FAILED}


@dataclass(frozen=True)
class Transition:
    sources: frozenset[str]
    targets: frozenset[str]
    verb: str  # for the refusal: "it cannot be <verb> from that state"


TRANSITIONS: dict[str, Transition] = {
    # the topic and its ACLs are made; where it goes depends on its link
    "provision": Transition(frozenset({State.PENDING_MIRROR}), FOLLOWING, "provisioned"),
    "pause": Transition(FOLLOWING - {State.PAUSED}, frozenset({State.PAUSED}), "paused"),
    "resume": Transition(
        frozenset({State.PAUSED}),
        frozenset({State.ACTIVE, State.LINK_PAUSED, State.SOURCE_UNAVAILABLE}),
        "resumed",
    ),
    "link-pause": Transition(
        frozenset({State.ACTIVE, State.SOURCE_UNAVAILABLE}),
        frozenset({State.LINK_PAUSED}),
        "paused with its link",
    ),
    "link-resume": Transition(
        frozenset({State.LINK_PAUSED}),
        frozenset({State.ACTIVE, State.PAUSED}),
        "resumed with its link",
    ),
    "source-lost": Transition(
        FOLLOWING, frozenset({State.SOURCE_UNAVAILABLE}), "marked source-unavailable"
    ),
    "source-back": Transition(
        frozenset({State.SOURCE_UNAVAILABLE}),
        frozenset({State.ACTIVE, State.PAUSED}),
        "marked available",
    ),
    "fail": Transition(FOLLOWING, frozenset({State.FAILED}), "failed"),
    "promote": Transition(PROMOTABLE, frozenset({State.PENDING_STOPPED}), "promoted"),
    "failover": Transition(FAILABLE_OVER, frozenset({State.PENDING_STOPPED}), "failed over"),
    "stop": Transition(frozenset({State.PENDING_STOPPED}), frozenset({State.STOPPED}), "stopped"),
    # a promote or failover that could not finish puts the mirror back as it was
    "abort-stop": Transition(frozenset({State.PENDING_STOPPED}), FAILABLE_OVER, "put back"),
    # reverse (reverse.py): the source fenced, the mirror catches up, then stops as a promote
    "reverse": Transition(
        frozenset({State.ACTIVE}), frozenset({State.PENDING_SYNCHRONIZE}), "reversed"
    ),
    "synchronized": Transition(
        frozenset({State.PENDING_SYNCHRONIZE}), frozenset({State.PENDING_STOPPED}), "stopped"
    ),
    "abort-reverse": Transition(frozenset({State.PENDING_SYNCHRONIZE}), FOLLOWING, "put back"),
    # truncate-and-restore (restore.py): set aside, then made anew, then a mirror
    "restore-set-up": Transition(
        frozenset({State.PENDING_SETUP_FOR_RESTORE}),
        frozenset({State.PENDING_RESTORE}),
        "set up for its restore",
    ),
    "restored": Transition(frozenset({State.PENDING_RESTORE}), FOLLOWING, "restored"),
}


def _check(event: str, to: str) -> Transition:
    transition = TRANSITIONS[event]
    if to not in transition.targets:
        raise ValueError(f"{event} cannot lead to {to}; allowed: {sorted(transition.targets)}")
    return transition


def move(mirror: MirrorTopic, event: str, to: str, **fields) -> None:
    """Change one mirror's state by `event` (and set `fields` with it), only if it is still in
    a state `event` starts from; otherwise refuse, saying what it is now. `mirror` is updated."""
    transition = _check(event, to)
    now = timezone.now()
    changed = MirrorTopic.objects.filter(pk=mirror.pk, state__in=transition.sources).update(
        state=to, state_time=now, **fields
    )
    if not changed:
        current = MirrorTopic.objects.filter(pk=mirror.pk).values_list("state", flat=True).first()
        if current is None:
            raise conflict(f"Mirror topic {mirror.mirror_topic!r} was deleted meanwhile.")
        meanwhile = " now" if current != mirror.state else ""
        mirror.state = current
        raise conflict(
            f"Mirror topic {mirror.mirror_topic!r} is {current}{meanwhile}; it cannot be "
            f"{transition.verb} from that state. Reload and try again if that still makes sense."
        )
    mirror.state, mirror.state_time = to, now
    for name, value in fields.items():
        setattr(mirror, name, value)


def move_all(mirrors: QuerySet[MirrorTopic], event: str, to: str, **fields) -> int:
    """The same for every mirror of `mirrors` that is in a state `event` starts from; the
    others are left as they are. Returns how many changed."""
    transition = _check(event, to)
    return mirrors.filter(state__in=transition.sources).update(
        state=to, state_time=timezone.now(), **fields
    )


def running_state(link: ClusterLink, paused: bool) -> str:
    """Where a following mirror belongs, given its link and whether a user paused it."""
    if paused:
        return MirrorTopic.State.PAUSED
    if link.state == ClusterLink.State.PAUSED:
        return MirrorTopic.State.LINK_PAUSED
    if link.state == ClusterLink.State.UNAVAILABLE:
        return MirrorTopic.State.SOURCE_UNAVAILABLE
    return MirrorTopic.State.ACTIVE


def snapshot(mirror: MirrorTopic) -> dict:
    """What the audit trail keeps of a mirror."""
    return {
        "link": mirror.link.name,
        "source_topic": mirror.source_topic,
        "state": mirror.state,
        "partitions": mirror.num_partitions,
        "config_overrides": mirror.config_overrides,
        "stop_offsets": mirror.stop_offsets,
    }
