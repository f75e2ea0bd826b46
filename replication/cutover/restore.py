"""Truncate and restore: the way back after a failover, on a bidirectional link.

Run on the old primary A once it is back: its topic T becomes a mirror of B's promoted T again,
holding exactly the records B holds, at B's offsets. The records B got from A (A's offsets
[first, point), read through the failed-over mirror's offset translation: identical offsets,
or A's with gaps where transaction markers, aborted records or a later mirror start left them)
are kept; the rest of A's records are set aside. Stock Kafka cannot cut a partition's tail, so
(docs/mirror-engine.md, "Truncate and restore"):

1. `PENDING_SETUP_FOR_RESTORE`: T is fenced (the mirrors' read-only rules). On A, the records B
   lacks (past the point, and any older than B's first) are copied into a quarantine topic
   (nothing is lost: each keeps its key, value, headers and timestamp, with its partition,
   offset and timestamp in headers), and the shared records into a holding topic. Both copies
   stay on A. Shared records A lost since the copy: the oldest (retention) are fine, the rest
   (compaction) end the restore here, before anything is deleted.
2. `PENDING_RESTORE`: T is deleted and made anew with its partitions and configs, and the shared
   records copied back at B's offsets (where retention took A's oldest, placeholders hold their
   offsets and are deleted at once: the log starts there).
3. T is a mirror of B's T on the link's half into A, its copy starting at the failover point:
   only what B took after the failover crosses the WAN.

Each step is stored on the mirror, so a worker killed at any point leaves work the next
`finish` redoes: in step 1 T is intact and fenced, and the copies are made again from scratch; in
step 2 the holding topic is complete (checked before the step is entered) and T is made anew
from it again. Until the end T is read-only: no client writes a half-restored topic.

The plan (the dry run) is `restore_plan`'s; the quarantine's review and deletion
`restore_quarantine`'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from infra.processes import wait_for
from replication.core import read_only, redis_channel
from replication.core.errors import ReplicationError, conflict
from replication.core.redis_channel import client
from replication.cutover.promote import carry_out, one_by_one
from replication.cutover.restore_plan import RestoreOutcome, check, shared_offsets
from replication.engine import publish
from replication.governance import audit
from replication.kafka import translations
from replication.kafka.connections import cluster_admin, records, source_admin
from replication.models import AuditEvent, ClusterLink, MirrorTopic, PendingStop
from replication.states.mirror_states import move
from replication.topics import links
from replication.topics.mirrors import running_state, snapshot
from spark_jobs import translation

log = logging.getLogger(__name__)

KIND = "truncate-and-restore"
State = MirrorTopic.State
QUARANTINE = "{topic}.quarantine-{stamp}"
HOLDING = "{topic}.restore-prefix"
LEASE_S = 10


def truncate_and_restore(
    actor: audit.Actor,
    link: ClusterLink,
    names: list[str],
    *,
    validate_only: bool = False,
    wait: bool = False,
    note: str = "",
) -> list[RestoreOutcome]:
    """Restore the named topics of `link`'s cluster (each the old source of a mirror that the
    other half failed over or promoted) as mirrors of their promoted copies, each on its own.
    Without `wait` the restore goes on in the background; with it, this returns once each is
    a mirror again or was refused on the way (its error in its outcome)."""
    outcomes = check(link, names)
    if not validate_only:
        started = carry_out(
            link,
            outcomes,
            one_by_one(lambda outcome: _start(actor, link, outcome, note)),
            lambda: finish(link),
            wait=wait,
            timeout=10 * settings.STOP_TIMEOUT_S,
            succeeded=_restored,
        )
        if wait:
            _settle(started, outcomes)
    return outcomes


def _restored(mirror: MirrorTopic) -> bool:
    return mirror.state not in (State.PENDING_SETUP_FOR_RESTORE, State.PENDING_RESTORE)


def _settle(started: list[MirrorTopic], outcomes: list[RestoreOutcome]) -> None:
    """Each restore waited for, in its outcome: a restored topic's copies (per partition, the
    records still to copy across), or why it was given up (that leaves no mirror)."""
    left = {m.pk: m for m in MirrorTopic.objects.filter(pk__in=[m.pk for m in started])}
    for mirror in started:
        outcome = next(o for o in outcomes if o.mirror_topic == mirror.mirror_topic)
        if mirror.pk in left:
            report = left[mirror.pk].stop_report or {}
            outcome.state = left[mirror.pk].state
            outcome.bytes_copied_within_cluster = report.get("bytes_copied_within_cluster", 0)
            to_copy = report.get("records_to_copy", {})
            truncated = report.get("messages_truncated", {})
            for p in outcome.partitions:  # counted as copied (the plan counts offsets)
                p["records_to_copy"] = to_copy.get(str(p["partition_id"]), 0)
                p["messages_truncated"] = truncated.get(str(p["partition_id"]), 0)
            continue
        failed = AuditEvent.objects.filter(
            action="mirror.restore_failed", target=f"mirror {mirror.mirror_topic}"
        ).last()
        outcome.error, outcome.status = (failed.message if failed else "It was given up."), 409


def _start(
    actor: audit.Actor, link: ClusterLink, outcome: RestoreOutcome, note: str
) -> MirrorTopic | None:
    """The topic's restore begins (audited): fenced, and a mirror in PENDING_SETUP_FOR_RESTORE."""
    target = f"mirror {outcome.mirror_topic}"
    peer = links.peer_of(link)
    try:
        with audit.refusals(actor, f"mirror.{KIND}", target):
            if outcome.error:
                raise ReplicationError(outcome.error, outcome.status)
            name = outcome.mirror_topic
            failed_over = peer.mirrors.get(mirror_topic=name)
            info = cluster_admin(link.destination).describe_topic(name)
            source_id = cluster_admin(peer.destination).describe_topic(name).topic_id
            pending: PendingStop = {
                "kind": KIND,
                "requested_at": timezone.now().isoformat(),
                "actor": actor.name,
                "note": note,
                "point": {
                    str(p["partition_id"]): p["offset_truncated_to"] for p in outcome.partitions
                },
                "quarantine": QUARANTINE.format(
                    topic=name, stamp=timezone.now().strftime("%Y%m%d%H%M%S")
                ),
                "failed_over": failed_over.pk,
            }
            try:
                with transaction.atomic():
                    # A reverse's STOPPED record of the topic (checked older than the failover)
                    # gives way to the new relationship; the audit trail keeps its history.
                    link.mirrors.filter(mirror_topic=name, state=State.STOPPED).delete()
                    mirror = MirrorTopic.objects.create(
                        link=link,
                        destination=link.destination,
                        source_topic=name,
                        mirror_topic=name,
                        source_topic_id=source_id,
                        num_partitions=info.partitions,
                        replication_factor=info.replication_factor,
                        state=State.PENDING_SETUP_FOR_RESTORE,
                        pending_stop=pending,
                    )
            except IntegrityError as exc:
                raise conflict(f"Topic {name!r} is being restored already.") from exc
            read_only.enforce(cluster_admin(link.destination), name)
    except (ReplicationError, KafkaAdminError) as exc:
        outcome.error = str(exc)
        outcome.status = getattr(exc, "status", 503)
        return None
    outcome.quarantine = pending["quarantine"]
    outcome.state = mirror.state
    audit.record(actor, f"mirror.{KIND}", target, after=snapshot(mirror), message=note)
    log.info("Truncate-and-restore of %s requested by %s", name, actor.name)
    return mirror


def finish(link: ClusterLink) -> None:
    """Move each restore of `link` on by one step (the next call goes on)."""
    restoring = link.mirrors.filter(
        state__in=[State.PENDING_SETUP_FOR_RESTORE, State.PENDING_RESTORE]
    )
    for mirror in restoring.select_related("link", "link__destination"):
        # One worker at a time on a topic, renewing its lease as it copies: one killed midway
        # hands the topic on within LEASE_S.
        with redis_channel.lease(f"restore:{mirror.pk}", LEASE_S) as renew:
            if renew is None:
                continue
            mirror.refresh_from_db()
            try:
                if mirror.state == State.PENDING_SETUP_FOR_RESTORE:
                    _set_up(mirror, renew)
                elif mirror.state == State.PENDING_RESTORE:
                    _restore(mirror, renew)
            except (KafkaAdminError, ReplicationError, RuntimeError) as exc:
                log.warning("Restore of %s waits: %s", mirror.mirror_topic, exc)


def _by_partition(values: dict[str, int] | None) -> dict[int, int]:
    return {int(p): o for p, o in (values or {}).items()}


def _set_up(mirror: MirrorTopic, renew: Callable[[], None]) -> None:
    """Step 1: what the promoted topic lacks into quarantine (past the failover point, and
    anything older than the mirror's first record), the shared records into the holding topic;
    all redone from scratch after a crash (the topic itself is untouched)."""
    admin = cluster_admin(mirror.destination)
    name, pending = mirror.mirror_topic, mirror.pending()
    local = records(mirror.destination)
    n = mirror.num_partitions
    starts = admin.start_offsets(name, n)
    ends = admin.end_offsets(name, n)
    failed_over = MirrorTopic.objects.get(pk=pending["failed_over"])
    stopped = _by_partition(failed_over.stop_offsets)
    runs = translations.of_topic(failed_over.destination, name)
    shared = shared_offsets(runs, stopped)
    holding, quarantine = HOLDING.format(topic=name), pending["quarantine"]
    for topic in (holding, quarantine):
        _make_empty(admin, topic, n, renew)
    counts, heads, size = {}, {}, 0
    for p in range(n):
        first, point = shared[p]
        point = min(point, ends[p])
        counts[p] = 0
        for start, end in ((starts[p], min(first, ends[p])), (point, ends[p])):
            moved, moved_size = local.copy_range(
                name, p, start, end, quarantine, _origin(p), progress=renew
            )
            counts[p], size = counts[p] + moved, size + moved_size
        kept_from = max(starts[p], first)
        kept, kept_size = local.copy_range(name, p, kept_from, point, holding, progress=renew)
        size += kept_size
        # Where the kept records go: the promoted topic's offsets, from the first one's on
        # (above 0 where retention took the oldest since the copy).
        heads[p] = runs.get(p, translation.Runs()).to_destination(kept_from) if kept else stopped[p]
        if kept != stopped[p] - heads[p]:
            _abandon(
                mirror,
                f"Partition {p} of {name!r} no longer holds every record the promoted topic got "
                f"from it ({kept} of {stopped[p] - heads[p]}: compaction removed some since the "
                "copy), so it cannot be made anew at the promoted topic's offsets. Nothing was "
                "deleted; promote and mirror anew.",
            )
            return
    # Its configs too, read while it is intact: step 2 makes it anew with them.
    configs = {k: v.value for k, v in admin.topic_configs(name).items() if v.is_set and v.value}
    done: PendingStop = {
        **pending,
        "quarantined": {str(p): c for p, c in counts.items()},
        "heads": {str(p): h for p, h in heads.items()},
        "restored_end": {str(p): o for p, o in stopped.items()},
        "configs": configs,
        "bytes_within": size,
    }
    move(mirror, "restore-set-up", State.PENDING_RESTORE, pending_stop=done)


def _origin(partition: int):
    def headers(offset: int, timestamp: int) -> list[tuple[str, bytes]]:
        return [
            ("isthmus.origin.partition", str(partition).encode()),
            ("isthmus.origin.offset", str(offset).encode()),
            ("isthmus.origin.timestamp", str(timestamp).encode()),
        ]

    return headers


def _make_empty(admin: KafkaAdmin, topic: str, partitions: int, renew: Callable[[], None]) -> None:
    with contextlib.suppress(TopicNotFound):
        admin.delete_topic(topic)
    _gone(admin, topic, renew)
    admin.create_topic(topic, partitions, None, {"retention.ms": "-1"})


def _gone(admin: KafkaAdmin, topic: str, renew: Callable[[], None]) -> None:
    def gone() -> bool:
        renew()
        return topic not in admin.list_topic_names()

    if not wait_for(gone, 60, 0.2):
        raise RuntimeError(f"the cluster did not finish deleting {topic} within 60 s")


def _restore(mirror: MirrorTopic, renew: Callable[[], None]) -> None:
    """Step 2 and 3: the topic made anew from the holding topic, at the promoted topic's
    offsets, then a mirror."""
    admin = cluster_admin(mirror.destination)
    name, pending = mirror.mirror_topic, mirror.pending()
    holding = HOLDING.format(topic=name)
    end, heads = _by_partition(pending["restored_end"]), _by_partition(pending["heads"])
    # What the promoted topic took after the failover: all that will cross (asked first, so a
    # promoted cluster out of reach holds the restore here, before anything is deleted).
    promoted = source_admin(mirror.link).end_offsets(name, mirror.num_partitions)
    with contextlib.suppress(TopicNotFound):  # a worker that died here deleted it already
        admin.delete_topic(name)
    _gone(admin, name, renew)
    configs = pending["configs"]
    admin.create_topic(name, mirror.num_partitions, mirror.replication_factor or None, configs)
    local = records(mirror.destination)
    # Offsets below the first kept record, held by placeholders and then deleted: the log
    # starts there, as the promoted topic's shared records do.
    for p, head in heads.items():
        local.placeholders(name, p, head, progress=renew)
    admin.delete_records(name, heads)
    size = pending.get("bytes_within", 0)
    for p in range(mirror.num_partitions):
        size += local.copy_range(holding, p, 0, end[p] - heads[p], name, progress=renew)[1]
    ends = admin.end_offsets(name, mirror.num_partitions)
    if ends != end:
        raise RuntimeError(f"{name} holds {ends} after the copy back, not {end}; done again")
    admin.delete_topic(holding)
    copied: PendingStop = {
        **pending,
        "bytes_within": size,
        "to_copy": {str(p): max(promoted[p] - end[p], 0) for p in end},
    }
    mirror.pending_stop = copied
    _become_mirror(mirror)


def _become_mirror(mirror: MirrorTopic) -> None:
    pending = mirror.pending()
    before = snapshot(mirror)
    move(
        mirror,
        "restored",
        running_state(mirror.link, False),
        pending_stop=None,
        stop_report={
            "kind": KIND,
            "actor": pending.get("actor", ""),
            "note": pending.get("note", ""),
            "offset_truncated_to": pending["point"],
            "messages_truncated": pending.get("quarantined", {}),
            "quarantine": pending["quarantine"],
            # Where the restored records came from: kept on this cluster, or copied across.
            "records_kept": {
                p: end - pending["heads"][p] for p, end in pending["restored_end"].items()
            },
            "bytes_copied_within_cluster": pending.get("bytes_within", 0),
            "records_to_copy": pending.get("to_copy", {}),
        },
    )
    publish.publish(mirror.link, client())
    audit.record(
        audit.Actor.system(KIND),
        "mirror.restored",
        f"mirror {mirror.mirror_topic}",
        before=before,
        after=snapshot(mirror),
        message=f"Divergent records in {pending['quarantine']}.",
    )
    log.info(
        "Restored %s at %s; it mirrors its promoted copy", mirror.mirror_topic, pending["point"]
    )


def _abandon(mirror: MirrorTopic, message: str) -> None:
    """Give a restore up in step 1: the copies removed, the fence lifted, the row gone."""
    admin = cluster_admin(mirror.destination)
    for topic in (HOLDING.format(topic=mirror.mirror_topic), mirror.pending()["quarantine"]):
        with contextlib.suppress(TopicNotFound):
            admin.delete_topic(topic)
    read_only.lift(admin, mirror.mirror_topic)
    before = snapshot(mirror)
    MirrorTopic.objects.filter(pk=mirror.pk).delete()
    audit.record(
        audit.Actor.system(KIND),
        "mirror.restore_failed",
        f"mirror {mirror.mirror_topic}",
        result=audit.AuditEvent.Result.FAILED,
        before=before,
        message=message,
    )
    log.error("Truncate-and-restore of %s given up: %s", mirror.mirror_topic, message)
