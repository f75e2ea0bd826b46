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
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

import redis
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from infra import processes
from infra.kafka_admin import KafkaAdminError
from replication.core import read_only
from replication.core.errors import ReplicationError, unavailable
from replication.core.redis_channel import client
from replication.engine import publish
from replication.governance import audit, stale_requests
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, MirrorTopic, PartitionValues, PendingStop, StopReport
from replication.observe.lag import MirrorStatus, PartitionStatus, describe_mirrors
from replication.schemas import subject_promotion
from replication.states.mirror_states import FAILABLE_OVER, FOLLOWING, PROMOTABLE, move
from replication.topics import offset_sync
from replication.topics.mirrors import running_state, snapshot, stopped_already, sync_from_source

log = logging.getLogger(__name__)

PROMOTE, FAILOVER = "promote", "failover"
REVERSES = ("reverse-and-start-mirror", "reverse-and-pause-mirror")  # reverse.KINDS
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


def _refusal(
    kind: str, mirror: MirrorTopic, errors: list[str], partitions: list[PartitionStatus]
) -> str:
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
    its outcome; without, a Celery task does (approvals.finish_stops). Returns the mirrors
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
        lost = _begin(actor, link, [mirror for _, mirror in ready], kind, note)
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


def _begin(
    actor: audit.Actor, link: ClusterLink, mirrors: list[MirrorTopic], kind: str, note: str
) -> dict[int, str]:
    """PENDING_STOPPED, and out of the link's mirror set, under the link's control lock so the
    supervisor cannot publish a set read before the change; one publish for all of them.
    Returns, by mirror pk, why one could not begin (it changed state meanwhile); a refusal of
    all (the lock, Redis) is raised."""
    if not mirrors:
        return {}
    requested_at = timezone.now().isoformat()
    pendings: dict[int, PendingStop] = {
        mirror.pk: {
            "kind": kind,
            "prior_state": mirror.state,
            "requested_at": requested_at,
            "actor": actor.name,
            "note": note,
        }
        for mirror in mirrors
    }
    try:
        r = client()
        with publish.control_lock(link, wait=30) as locked:
            if not locked:
                raise unavailable("The link's stream supervisor is busy; try again in a minute.")
            lost = {}
            with transaction.atomic():  # one commit for them all
                for mirror in mirrors:
                    pending = pendings[mirror.pk]
                    try:
                        move(
                            mirror,
                            kind,
                            State.PENDING_STOPPED,
                            pending_stop=pending,
                            action_error="",
                        )
                    except ReplicationError as exc:  # a lost race: this one alone
                        lost[mirror.pk] = str(exc)
            mirrors = [mirror for mirror in mirrors if mirror.pk not in lost]
            try:
                generation = publish.publish(link, r)
            except redis.RedisError:
                with transaction.atomic():
                    for mirror in mirrors:
                        prior = pendings[mirror.pk]["prior_state"]
                        move(mirror, "abort-stop", prior, pending_stop=None)
                raise
            with transaction.atomic():
                for mirror in mirrors:
                    pending = {**pendings[mirror.pk], "generation": generation}
                    MirrorTopic.objects.filter(pk=mirror.pk).update(pending_stop=pending)
                    mirror.pending_stop = pending
        return lost
    except redis.RedisError as exc:
        raise unavailable(
            f"Redis, which carries the console's orders to the link's stream, does not answer "
            f"({exc}). Nothing was changed; try again when it is back."
        ) from exc


def finish_pending_stops(link: ClusterLink) -> None:
    """Finish each PENDING_STOPPED mirror of `link` whose writer has stopped; put back those
    whose writer did not stop in time. Runs under the link's control lock, so one caller at a
    time finishes a given mirror."""
    # A reverse's stop completes otherwise (reverse.finish).
    stopping = link.mirrors.filter(state=State.PENDING_STOPPED).exclude(
        pending_stop__kind__in=REVERSES
    )
    if not stopping.exists():
        return
    with publish.control_lock(link, wait=10) as locked:
        if not locked:
            return
        ready = []
        for mirror in stopping.select_related("link", "destination"):
            pending = mirror.pending_stop or {}
            generation = pending.get("generation")
            if generation is not None and publish.stopped_writing(
                link, mirror.mirror_topic, generation
            ):
                ready.append(mirror)
                continue
            asked = datetime.fromisoformat(pending["requested_at"]) if pending else None
            if asked is None or (timezone.now() - asked).total_seconds() > settings.STOP_TIMEOUT_S:
                _put_back(
                    mirror,
                    pending,
                    f"The link's stream did not confirm within {settings.STOP_TIMEOUT_S} s that "
                    f"it stopped writing {mirror.mirror_topic!r}, so its read-only ACLs stayed. "
                    "The mirror is as it was before; look at the link's stream, then try again.",
                )
        _complete(ready)


def _complete(mirrors: list[MirrorTopic]) -> None:
    """Their writer has stopped: record where each partition stopped and the lag left behind,
    lift the read-only ACLs, and each topic is STOPPED. The clusters are read and the ACLs
    lifted for all of them at once (a bulk failover of a thousand mirrors takes seconds)."""
    if not mirrors:
        return
    statuses = {s.mirror.pk: s for s in describe_mirrors(mirrors)}
    admin = destination_admin(mirrors[0].link)
    try:
        read_only.lift_all(admin, [m.mirror_topic for m in mirrors])
    except KafkaAdminError as exc:
        for mirror in mirrors:
            message = f"The destination cluster refused to stop the mirror: {exc}"
            _put_back(mirror, mirror.pending(), message)
        return
    for mirror in mirrors:
        pending, status = mirror.pending(), statuses[mirror.pk]
        lags = {str(p.partition): p.lag for p in status.partitions}
        # Where each partition stopped (none for a topic deleted outside the console).
        stop_offsets = {
            str(p.partition): p.dest_log_end_offset
            for p in status.partitions
            if p.dest_log_end_offset >= 0
        }
        offsets = _last_offset_sync(mirror, pending["kind"], admin)
        before = snapshot(mirror)
        kind = pending["kind"]
        move(
            mirror,
            "stop",
            State.STOPPED,
            stop_offsets=stop_offsets,
            stop_report=stop_report(pending, lags, consumer_offsets=offsets),
            pending_stop=None,
            paused=False,
        )
        audit.record(
            audit.Actor.system(kind),
            "mirror.stopped",
            f"mirror {mirror.mirror_topic}",
            before=before,
            after={**snapshot(mirror), "lag_left_behind": lags},
        )
        log.info(
            "Mirror topic %s STOPPED by %s at offsets %s; it is writable now",
            mirror.mirror_topic,
            kind,
            mirror.stop_offsets,
        )
        subject_promotion.release_subjects([mirror], audit.Actor.system(kind))


def stop_report(
    pending: PendingStop, lags: PartitionValues, consumer_offsets: str = "", reversed: str = ""
) -> StopReport:
    """What a STOPPED mirror keeps of how it stopped: who asked, when, why, the lag left; what
    a promote's last offset sync did, and what mirrors a reversed one now (each if any)."""
    report: StopReport = {
        "kind": pending["kind"],
        "actor": pending.get("actor", ""),
        "requested_at": pending.get("requested_at"),
        "note": pending.get("note", ""),
        "lag": lags,
    }
    if consumer_offsets:
        report["consumer_offsets"] = consumer_offsets
    if reversed:
        report["reversed"] = reversed
    return report


def _last_offset_sync(mirror: MirrorTopic, kind: str, destination) -> str:
    """A promote syncs the mirror's consumer offsets one last time, now that its copy is
    final, before consumers move to it; a failover does not reach the source. Returns what
    happened, for the stop report ("" when offset sync is off or it is a failover)."""
    link = mirror.link
    if kind != "promote" or not offset_sync.enabled(link):
        return ""
    try:
        outcome = offset_sync.sync_offsets(
            link, timezone.now(), source_admin(link), destination, only=[mirror]
        )
    except (KafkaAdminError, ReplicationError) as exc:
        log.warning("Last offset sync of %s before its promote failed: %s", mirror, exc)
        return f"not synced a last time: {exc}"
    skipped = [g for g, state in outcome.groups.items() if state != offset_sync.Sync.IN_STEP]
    return f"synced a last time: {len(outcome.groups) - len(skipped)} group(s) in step" + (
        f", not in step: {', '.join(sorted(skipped))}" if skipped else ""
    )


def _put_back(mirror: MirrorTopic, pending: PendingStop, message: str) -> None:
    prior = pending.get("prior_state", State.ACTIVE)
    to = running_state(mirror.link, mirror.paused) if prior in FOLLOWING else prior
    try:  # whatever was lifted goes back: it must stay read-only while it mirrors
        mirror.read_only_enforced = read_only.enforce(
            destination_admin(mirror.link), mirror.mirror_topic
        )
    except (KafkaAdminError, ReplicationError):
        log.exception("Could not restore the read-only ACLs of %s", mirror.mirror_topic)
    before = snapshot(mirror)
    move(mirror, "abort-stop", to, pending_stop=None, action_error=message)
    record_put_back(mirror, pending, before, message, "mirror.stop_failed")


def record_put_back(
    mirror: MirrorTopic, pending: PendingStop, before: dict, message: str, action: str
) -> None:
    """A stop (or reverse) that could not finish, once the mirror is back: its stream told, the
    log and the audit trail say why."""
    with contextlib.suppress(redis.RedisError):  # else the supervisor publishes it within seconds
        publish.publish(mirror.link, client())
    log.error("%s of mirror topic %s did not finish: %s", pending.get("kind"), mirror, message)
    audit.record(
        audit.Actor.system(pending.get("kind", "promote")),
        action,
        f"mirror {mirror.mirror_topic}",
        result=audit.AuditEvent.Result.FAILED,
        before=before,
        after=snapshot(mirror),
        message=message,
    )
