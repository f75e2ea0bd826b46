"""Promote and failover: a mirror topic stops mirroring and becomes a normal writable topic.

Promote is the planned way: refused unless the source answers and every partition has lag 0,
measured on the real clusters now; the topic configs are synced one last time. Failover is the
disaster way: the same without those checks, so it works with the source cluster down, and it
records the lag it left behind.

Both go through PENDING_STOPPED: the mirror leaves its link's mirror set, and only once the
link's stream acknowledges that it no longer writes the mirror (`publish.stopped_writing`) are
the stop offsets read and the read-only ACLs lifted, making it STOPPED. A stop that cannot
finish (no acknowledgement in time, the destination refusing) puts the mirror back as it was,
with the error on it.

The checks (the dry run) and how a stop starts are here; its batches, begun and completed for
all its mirrors at once, are `stop_batches`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from celery import current_app
from django.conf import settings

from infra import processes
from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError, unavailable
from replication.cutover.stop_batches import begin, finish_pending_stops
from replication.governance import audit, stale_requests
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, MirrorTopic
from replication.observe.lag import MirrorStatus, describe_mirrors
from replication.observe.lag_partitions import PartitionStatus
from replication.states.mirror_states import FAILABLE_OVER, PROMOTABLE
from replication.topics.mirrors import snapshot, stopped_already, sync_from_source

log = logging.getLogger(__name__)

PROMOTE, FAILOVER = "promote", "failover"
State = MirrorTopic.State
# A mirror in one of these is still being promoted, failed over or reversed.
UNDER_WAY = (
    State.PENDING_SYNCHRONIZE,
    State.PENDING_STOPPED,
    State.PENDING_SETUP_FOR_RESTORE,
    State.PENDING_RESTORE,
)


@dataclass
class TopicOutcome:
    """What a promote or failover did (or, validating, would do) to one topic."""

    mirror_topic: str
    error: str = ""
    status: int = 200  # as an API would answer for this topic alone
    state: str = ""
    lags: list[PartitionStatus] = field(default_factory=list)

    def as_dict(self) -> dict:
        """For the record of an approval request."""
        return {
            "mirror_topic": self.mirror_topic,
            "error": self.error,
            "state": self.state,
            "lags": {str(p.partition): p.lag for p in self.lags},
        }


Outcome = TypeVar("Outcome", bound=TopicOutcome)  # a stop's, a reverse's or a restore's


def check(kind: str, link: ClusterLink, names: list[str]) -> list[TopicOutcome]:
    """The dry run: per topic, whether it may be stopped now, with its lag per partition read
    from both clusters now."""
    return outcomes_for(
        link, names, lambda mirror, status: _refusal(kind, mirror, status.errors, status.partitions)
    )


def outcomes_for(
    link: ClusterLink, names: list[str], refusal: Callable[[MirrorTopic, MirrorStatus], str]
) -> list[TopicOutcome]:
    """Each named topic's outcome as a dry run: not a mirror of `link` (404), or what
    `refusal` says of it as it is now (409; "" lets it go ahead), with its lags."""
    found = {m.mirror_topic: m for m in link.mirrors.filter(mirror_topic__in=names)}
    statuses = {s.mirror.mirror_topic: s for s in describe_mirrors(found.values())}
    outcomes = []
    for name in names:
        mirror = found.get(name)
        if mirror is None:
            outcomes.append(
                TopicOutcome(name, f"Topic {name!r} is not a mirror topic of {link.name!r}.", 404)
            )
            continue
        status = statuses[name]
        outcome = TopicOutcome(name, state=mirror.state, lags=status.partitions)
        outcome.error = refusal(mirror, status)
        outcome.status = 409 if outcome.error else 200
        outcomes.append(outcome)
    return outcomes


def state_refusal(kind: str, mirror: MirrorTopic) -> str:
    """Why `mirror`'s state alone refuses a promote or failover (`kind`); "" if it does not."""
    name = mirror.mirror_topic
    if mirror.state == State.STOPPED:
        return stopped_already(mirror)
    if mirror.state == State.PENDING_STOPPED:
        return (
            f"Topic {name!r} is already stopping its mirror (a promote or failover is under way)."
        )
    if kind == FAILOVER:
        if mirror.state not in FAILABLE_OVER:
            return f"Mirror topic {name!r} is {mirror.state}; it cannot be failed over yet."
        return ""
    if mirror.state not in PROMOTABLE:
        return (
            f"Mirror topic {name!r} is {mirror.state}; promote needs it ACTIVE or PAUSED with "
            "its source answering. Use failover to stop it without its source."
        )
    return ""


def _refusal(
    kind: str, mirror: MirrorTopic, errors: list[str], partitions: list[PartitionStatus]
) -> str:
    name = mirror.mirror_topic
    if refused := state_refusal(kind, mirror):
        return refused
    if kind == FAILOVER:
        return ""
    source_trouble = [e for e in errors if e.startswith("Source")]
    if source_trouble:
        return (
            f"Promote measures the lag of {name!r} on its source, which did not answer "
            f"({source_trouble[0]}). Use failover to stop the mirror without its source."
        )
    lagging = [p for p in partitions if p.lag != 0]
    if lagging:
        lags = ", ".join(
            f"partition {p.partition} lags {p.lag} record{'s' if p.lag != 1 else ''}"
            if p.lag > 0
            else f"partition {p.partition} has an unknown lag"
            for p in lagging
        )
        return (
            f"Mirror topic {name!r} is not caught up: {lags}. Promote needs lag 0 on every "
            "partition: wait until it is (kafka-mirrors --describe shows it), or fail over."
        )
    if not partitions or errors:
        return f"The lag of {name!r} could not be read: {'; '.join(errors) or 'no partitions'}."
    return ""


def stop_mirrors(
    actor: audit.Actor,
    link: ClusterLink,
    names: list[str],
    kind: str,
    *,
    validate_only: bool = False,
    wait: bool = False,
    note: str = "",
) -> list[TopicOutcome]:
    """Promote (`kind` PROMOTE) or fail over (FAILOVER) the named mirrors of `link`, each on
    its own: one topic's refusal does not stop the others. `note` goes into the audit trail
    (an approval, an override, a break-glass reason).

    Without `wait` the stop is scheduled: the mirrors are PENDING_STOPPED when this returns,
    and a Celery task finishes them. With `wait` this returns once each is STOPPED or was put
    back (its outcome then carries the error)."""
    outcomes = check(kind, link, names)
    if not validate_only:
        carry_out(
            link,
            outcomes,
            lambda found: _start_stops(actor, link, found, kind, note),
            lambda: finish_pending_stops(link),
            wait=wait,
        )
    return outcomes


def carry_out(
    link: ClusterLink,
    outcomes: list[Outcome],
    start: Callable[[list[Outcome]], list[MirrorTopic]],
    finish: Callable[[], None],
    *,
    wait: bool,
    timeout: float | None = None,
    succeeded: Callable[[MirrorTopic], bool] = lambda mirror: mirror.state == State.STOPPED,
) -> list[MirrorTopic]:
    """Begin the checked topics' stops, reverses or restores with `start`, which returns the
    mirrors begun (a topic that could not has its refusal in its outcome). Then, with `wait`,
    move them on here with `finish` until each is done (`succeeded`) or put back, its error in
    its outcome; without, a Celery task does (request_runs.finish_stops). Returns the mirrors
    begun."""
    started = start(outcomes)
    if started and wait:
        _wait_until_done(started, outcomes, finish, timeout, succeeded)
    elif started:
        current_app.send_task("replication.tasks.finish_stops", args=[link.pk])
    return started


def one_by_one(
    start: Callable[[Outcome], MirrorTopic | None],
) -> Callable[[list[Outcome]], list[MirrorTopic]]:
    """`carry_out`'s start from one that begins a single topic (None: it could not)."""
    return lambda outcomes: [m for outcome in outcomes if (m := start(outcome)) is not None]


def _start_stops(
    actor: audit.Actor, link: ClusterLink, outcomes: list[TopicOutcome], kind: str, note: str
) -> list[MirrorTopic]:
    """Begin the promote or failover of each checked topic (audited, and superseding the
    requests it overtakes); a topic that could not begin has its refusal in its outcome. All
    begin under one hold of the link's control lock, with one new mirror set for its stream."""
    ready: list[tuple[TopicOutcome, MirrorTopic]] = []
    for outcome in outcomes:
        try:
            with audit.refusals(actor, f"mirror.{kind}", f"mirror {outcome.mirror_topic}"):
                if outcome.error:
                    raise ReplicationError(outcome.error, outcome.status)
                mirror = link.mirrors.get(mirror_topic=outcome.mirror_topic)
                if kind == PROMOTE:
                    _last_config_sync(mirror)
        except ReplicationError as exc:
            outcome.error, outcome.status = str(exc), exc.status
            continue
        ready.append((outcome, mirror))
    befores = {mirror.pk: snapshot(mirror) for _, mirror in ready}
    try:
        lost = begin(actor, link, [mirror for _, mirror in ready], kind, note)
    except ReplicationError as exc:
        lost = {mirror.pk: str(exc) for _, mirror in ready}
    for outcome, mirror in ready:
        if mirror.pk in lost:
            outcome.error, outcome.status = lost[mirror.pk], 409
            audit.record(
                actor,
                f"mirror.{kind}",
                f"mirror {mirror.mirror_topic}",
                result=audit.AuditEvent.Result.REFUSED,
                message=lost[mirror.pk],
            )
    ready = [(outcome, mirror) for outcome, mirror in ready if mirror.pk not in lost]
    done = "promoted" if kind == PROMOTE else "failed over"
    glass = " with break glass" if note.startswith(audit.BREAK_GLASS) else ""
    for outcome, mirror in ready:
        outcome.state = mirror.state
        stale_requests.supersede(
            link, [mirror.mirror_topic], f"{actor.name} {done} {mirror.mirror_topic}{glass}"
        )
        lags = {str(p.partition): p.lag for p in outcome.lags}
        audit.record(
            actor,
            f"mirror.{kind}",
            f"mirror {mirror.mirror_topic}",
            before=befores[mirror.pk],
            after={**snapshot(mirror), "lag": lags},
            message=note,
        )
        log.info("%s of mirror topic %s requested by %s", kind.title(), mirror, actor.name)
    return [mirror for _, mirror in ready]


def _wait_until_done(
    scheduled: list[MirrorTopic],
    outcomes: Sequence[TopicOutcome],
    finish: Callable[[], None],
    timeout: float | None,
    succeeded: Callable[[MirrorTopic], bool],
) -> None:
    pks = [m.pk for m in scheduled]

    def all_done() -> bool:
        finish()
        return not MirrorTopic.objects.filter(pk__in=pks, state__in=UNDER_WAY).exists()

    processes.wait_for(all_done, timeout or settings.STOP_TIMEOUT_S + 15, ignore=())
    done = {m.mirror_topic: m for m in MirrorTopic.objects.filter(pk__in=pks)}
    for outcome in outcomes:
        mirror = done.get(outcome.mirror_topic)
        if mirror is not None:
            outcome.state = mirror.state
            if not succeeded(mirror):
                outcome.error = mirror.action_error or f"It is still {mirror.state}."
                outcome.status = 503


def _last_config_sync(mirror: MirrorTopic) -> None:
    """Before a promote: the topic leaves with its source's configs."""
    try:
        sync_from_source(
            mirror,
            source_admin(mirror.link),
            destination_admin(mirror.link),
            mirror.link.config("topic.config.sync.include"),
        )
    except KafkaAdminError as exc:
        raise unavailable(
            f"The last config sync of {mirror.mirror_topic!r} before its promote failed: "
            f"{exc} Nothing was changed; try again."
        ) from exc
