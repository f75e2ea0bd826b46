"""A stop's batches, promote's and failover's alike: `begin` takes the checked mirrors to
PENDING_STOPPED and out of the link's mirror set under its control lock, with one publish for
all of them; `finish_pending_stops` completes those whose writer has stopped (`_complete`: the
stop offsets read, the read-only ACLs lifted and each STOPPED, in one request to each cluster
for all of them, so a thousand mirrors take seconds) and puts back those it did not in time,
with the error on them. What may be stopped, and how a stop starts, is `promote`'s.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from infra.kafka_errors import KafkaAdminError
from replication.core import read_only
from replication.core.errors import ReplicationError, unavailable
from replication.core.redis_channel import client
from replication.engine import publish
from replication.governance import audit
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, MirrorTopic, PartitionValues, PendingStop, StopReport
from replication.observe.lag import describe_mirrors
from replication.schemas import subject_promotion
from replication.states.mirror_states import FOLLOWING, move
from replication.topics import offset_sync
from replication.topics.mirrors import running_state, snapshot

log = logging.getLogger(__name__)

REVERSES = ("reverse-and-start-mirror", "reverse-and-pause-mirror")  # reverse.KINDS
State = MirrorTopic.State


def begin(
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
