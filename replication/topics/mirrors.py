"""Mirror topics: create, list, describe, pause, resume, fail over, delete; and the state
changes the syncers make. One function per state change.

Creating them is `mirror_creation`'s (one or a thousand at once, in bulk requests), what is
checked first `mirror_checks`'s.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from replication.core import filters, read_only, topic_configs
from replication.core.errors import ReplicationError, conflict, not_found
from replication.governance import audit, stale_requests
from replication.kafka.connections import destination_admin, source_admin, unreachable
from replication.models import ClusterLink, KafkaCluster, MirrorTopic
from replication.states.mirror_states import FOLLOWING, move, running_state, snapshot
from replication.topics.mirror_checks import mirrored_back
from replication.topics.mirror_creation import (  # noqa: F401 (create_mirror, create_mirrors: their callers' door)
    create_mirror,
    create_mirrors,
    note_declined,
)

log = logging.getLogger(__name__)

State = MirrorTopic.State
Error = MirrorTopic.Error


def get_mirror(destination: KafkaCluster, name: str, link: ClusterLink | None = None):
    mirrors = MirrorTopic.objects.select_related("link", "destination")
    mirror = mirrors.filter(destination=destination, mirror_topic=name).first()
    if mirror is None or (link is not None and mirror.link_id != link.pk):
        where = f"link {link.name!r}" if link else f"cluster {destination.name}"
        raise not_found(f"Topic {name!r} is not a mirror topic of {where}.")
    return mirror


def mirrorable_topics(link: ClusterLink) -> list[str]:
    """The source's topics the link has no mirror of yet (Kafka's and Isthmus's internal ones,
    and mirrors fed from this link's destination, left out), to pick from when creating one."""
    taken = set(link.mirrors.values_list("source_topic", flat=True)) | set(mirrored_back(link))
    names = source_admin(link).topic_partition_counts()
    return sorted(n for n in names if n not in taken and not filters.internal_topic(n))


def list_mirrors(
    *,
    link: ClusterLink | None = None,
    destination: KafkaCluster | None = None,
    states: list[str] | None = None,
) -> QuerySet[MirrorTopic]:
    mirrors = MirrorTopic.objects.select_related("link", "destination")
    if link is not None:
        mirrors = mirrors.filter(link=link)
    if destination is not None:
        mirrors = mirrors.filter(destination=destination)
    if states:
        mirrors = mirrors.filter(state__in=states)
    return mirrors


def pause_mirror(
    actor: audit.Actor, mirror: MirrorTopic, *, validate_only: bool = False
) -> MirrorTopic:
    """Stop fetching for this mirror; it stays read-only."""
    target = f"mirror {mirror.mirror_topic}"
    with audit.refusals(actor, "mirror.pause", target):
        if mirror.state == State.PAUSED:
            raise conflict(f"Mirror topic {mirror.mirror_topic!r} is already paused.")
        if mirror.state not in FOLLOWING:
            raise conflict(not_following(mirror, "pause"))
        if validate_only:
            return mirror
        before = snapshot(mirror)
        move(mirror, "pause", State.PAUSED, paused=True)
        stale_requests.supersede(
            mirror.link, [mirror.mirror_topic], f"{actor.name} paused {mirror.mirror_topic}"
        )
    audit.record(actor, "mirror.pause", target, before=before, after=snapshot(mirror))
    return mirror


def resume_mirror(
    actor: audit.Actor, mirror: MirrorTopic, *, validate_only: bool = False
) -> MirrorTopic:
    target = f"mirror {mirror.mirror_topic}"
    with audit.refusals(actor, "mirror.resume", target):
        if mirror.state != State.PAUSED:
            raise conflict(
                f"Mirror topic {mirror.mirror_topic!r} is not paused (it is {mirror.state})."
            )
        if validate_only:
            return mirror
        before = snapshot(mirror)
        move(mirror, "resume", running_state(mirror.link, False), paused=False)
    audit.record(actor, "mirror.resume", target, before=before, after=snapshot(mirror))
    return mirror


def not_following(mirror: MirrorTopic, verb: str) -> str:
    if mirror.state == State.STOPPED:
        return stopped_already(mirror)
    return f"Mirror topic {mirror.mirror_topic!r} is {mirror.state}; it cannot be {verb}d now."


def stopped_already(mirror: MirrorTopic) -> str:
    return (
        f"Topic {mirror.mirror_topic!r} has already stopped its mirror from "
        f"{mirror.link.name!r}; it is a normal topic now."
    )


def delete_mirror(actor: audit.Actor, mirror: MirrorTopic) -> None:
    """Delete the mirror topic on the destination, with its data, and end the mirroring.

    Of concurrent deletes of one mirror the database lets one through: its row's deletion is
    the claim, held (a row lock on PostgreSQL, the write lock on SQLite) until the topic and
    its ACLs are gone; the others find no row and are refused before they touch the cluster,
    where by then a new mirror of that name may stand.
    """
    name = mirror.mirror_topic
    target = f"mirror {name}"
    with audit.refusals(actor, "mirror.delete", target):
        admin = destination_admin(mirror.link)
        before = snapshot(mirror)
        with transaction.atomic():
            claimed, _ = MirrorTopic.objects.filter(pk=mirror.pk).delete()
            if not claimed:
                raise conflict(f"Mirror topic {name!r} was deleted meanwhile.")
            # In the same transaction: auto-create never sees the mirror gone but not declined.
            note_declined(mirror.link, [mirror.source_topic], True)
            stale_requests.supersede(mirror.link, [name], f"{actor.name} deleted {name}")
            try:
                with contextlib.suppress(TopicNotFound):  # deleted outside the console already
                    admin.delete_topic(name)
            except KafkaAdminError as exc:  # the row comes back with the rollback
                raise unreachable("destination", exc) from exc
            # Lifted before the row goes for good, so no new mirror of the name has them yet.
            try:
                read_only.lift(admin, name)
            except KafkaAdminError:  # the topic is gone; left-over ACLs block no one
                log.warning("Could not remove the read-only ACLs of deleted topic %s", name)
    audit.record(actor, "mirror.delete", target, before=before)
    log.info("Deleted mirror topic %s", name)


# State changes made by the syncers. ---------------------------------------------------------

_SYNCER = audit.Actor.system("syncer")


def fail_mirror(mirror: MirrorTopic, error: str, message: str) -> None:
    """An unrecoverable per-topic error: the mirror is FAILED with `error`. Only a mirror still
    following its source fails: a promote or failover meanwhile stands."""
    before = snapshot(mirror)
    try:
        move(mirror, "fail", State.FAILED, mirror_error=error, error_message=message)
    except ReplicationError:
        return
    log.error("Mirror topic %s FAILED (%s): %s", mirror.mirror_topic, error, message)
    stale_requests.supersede(
        mirror.link, [mirror.mirror_topic], f"{mirror.mirror_topic} FAILED: {message}"
    )
    audit.record(
        _SYNCER,
        "mirror.fail",
        f"mirror {mirror.mirror_topic}",
        result=audit.AuditEvent.Result.FAILED,
        before=before,
        after=snapshot(mirror),
        message=message,
    )


def grow_mirror(mirror: MirrorTopic, admin: KafkaAdmin, partitions: int, has: int) -> None:
    """The source gained partitions: the mirror topic (which `has` as many now) gets as many,
    and the mirror's record says so."""
    before = snapshot(mirror)
    if has < partitions:
        admin.create_partitions(mirror.mirror_topic, partitions)
    mirror.num_partitions = partitions
    with transaction.atomic():  # the record and its audit are seen together or not at all
        mirror.save(update_fields=["num_partitions"])
        audit.record(
            _SYNCER,
            "mirror.grow",
            f"mirror {mirror.mirror_topic}",
            before=before,
            after=snapshot(mirror),
        )
    log.info("Grew mirror topic %s to %d partitions", mirror.mirror_topic, partitions)


def sync_from_source(
    mirror: MirrorTopic, source: KafkaAdmin, destination: KafkaAdmin, include: str | None
) -> None:
    """Bring the mirror's synced topic configs in line with its source topic's."""
    try:
        source_configs = source.topic_configs(mirror.source_topic)
        mirror_configs = destination.topic_configs(mirror.mirror_topic)
    except TopicNotFound:
        return  # the metadata syncer decides what a missing topic means
    overrides = mirror.config_overrides
    to_set, to_delete = topic_configs.changes(
        topic_configs.desired(source_configs, include, overrides),
        {k: v.value for k, v in mirror_configs.items() if v.is_set},
        topic_configs.synced_names(include, overrides),
    )
    if not (to_set or to_delete):
        return
    destination.alter_topic_configs(mirror.mirror_topic, to_set, to_delete)
    log.info(
        "Synced configs of mirror topic %s from its source: set %s, reset %s",
        mirror.mirror_topic,
        to_set or "nothing",
        to_delete or "nothing",
    )
    audit.record(
        _SYNCER,
        "mirror.sync_configs",
        f"mirror {mirror.mirror_topic}",
        after={"set": to_set, "reset": to_delete},
    )


def note_source_missing(mirror: MirrorTopic, now: datetime) -> None:
    """The source topic is gone: retry until the link's retry timeout, then fail the mirror."""
    if mirror.source_missing_since is None:
        mirror.source_missing_since = now
        mirror.save(update_fields=["source_missing_since"])
        log.warning(
            "Source topic %s of mirror %s is missing; retrying",
            mirror.source_topic,
            mirror.mirror_topic,
        )
    timeout_ms = mirror.link.int_config("cluster.link.retry.timeout.ms")
    if (now - mirror.source_missing_since).total_seconds() * 1000 >= timeout_ms:
        fail_mirror(
            mirror,
            Error.SOURCE_TOPIC_MAY_BE_DELETED,
            f"Source topic {mirror.source_topic!r} has been missing for longer than "
            f"cluster.link.retry.timeout.ms ({timeout_ms} ms). Delete the mirror, or "
            "re-create the source topic and then the mirror.",
        )


def note_records_lost(mirror: MirrorTopic, found: dict[int, tuple[int, int]]) -> bool:
    """The source deleted records before the mirror copied them (retention outran
    replication): keep each partition's lost range [first, end), merged with what was lost
    before, and say so in the log and the audit trail. Returns whether anything new was lost.
    The lag samples and the verification both find it, maybe at once: one of them says so."""
    with transaction.atomic():
        row = MirrorTopic.objects.select_for_update().get(pk=mirror.pk)
        lost = {p: list(r) for p, r in (row.records_lost or {}).items()}
        for partition, (first, end) in found.items():
            had = lost.get(str(partition))
            merged = [min(first, had[0]), max(end, had[1])] if had else [first, end]
            lost[str(partition)] = merged
        if lost == (row.records_lost or {}):
            mirror.records_lost = row.records_lost
            return False
        MirrorTopic.objects.filter(pk=mirror.pk).update(records_lost=lost)
    before = {"records_lost": row.records_lost}
    mirror.records_lost = lost
    said = records_lost(mirror)
    log.error("Mirror topic %s is no longer an exact copy: %s", mirror.mirror_topic, said)
    audit.record(
        audit.Actor.system("verification"),
        "mirror.records_lost",
        f"mirror {mirror.mirror_topic}",
        result=audit.AuditEvent.Result.FAILED,
        before=before,
        after={"records_lost": lost},
        message=said,
    )
    return True


def records_lost(mirror: MirrorTopic) -> str:
    """What to say of a mirror that lost source records ("" if it has not)."""
    if not mirror.records_lost:
        return ""
    ranges = ", ".join(
        f"partition {p} offsets {first} to {end - 1}"
        for p, (first, end) in sorted(mirror.records_lost.items(), key=lambda i: int(i[0]))
    )
    count = sum(end - first for first, end in mirror.records_lost.values())
    return (
        f"{count} source record{'s' if count != 1 else ''} were deleted at the source "
        f"(retention) before the mirror copied them: {ranges}. The mirror is not an exact "
        "copy of its source; give the source topic a longer retention, and re-create the "
        "mirror if it must hold them."
    )


def source_missing(mirror: MirrorTopic) -> str:
    """What to say of a mirror whose source topic is gone ("" while it is there): since when,
    and when the mirror fails unless the topic comes back."""
    if mirror.source_missing_since is None:
        return ""
    since = mirror.source_missing_since
    fails_at = since + timedelta(
        milliseconds=mirror.link.int_config("cluster.link.retry.timeout.ms")
    )
    return (
        f"Source topic {mirror.source_topic!r} has been missing since {since:%Y-%m-%d %H:%M:%S} "
        f"UTC; the mirror fails at {fails_at:%Y-%m-%d %H:%M:%S} UTC unless it comes back "
        "(cluster.link.retry.timeout.ms)."
    )


def note_source_present(mirror: MirrorTopic) -> None:
    if mirror.source_missing_since is not None:
        mirror.source_missing_since = None
        mirror.save(update_fields=["source_missing_since"])


def forget_mirror(mirror: MirrorTopic, admin: KafkaAdmin) -> None:
    """The mirror topic was deleted on the destination outside the console: the mirroring
    ends, as it does after an ordinary topic delete in Cluster Linking."""
    read_only.lift(admin, mirror.mirror_topic)
    before = snapshot(mirror)
    with transaction.atomic():
        mirror.delete()
        note_declined(mirror.link, [mirror.source_topic], True)
    log.warning("Mirror topic %s was deleted on the destination; mirroring ended", mirror)
    audit.record(_SYNCER, "mirror.forget", f"mirror {mirror.mirror_topic}", before=before)
