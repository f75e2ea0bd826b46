"""Mirror topics: create, list, describe, pause, resume, fail over, delete; and the state
changes the syncers make. One function per state change.

A mirror is created read-only (ACLs first, then the topic, so no one can write to it in
between) and with nothing half-made left behind when a step fails.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from datetime import datetime, timedelta

from confluent_kafka import KafkaError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from infra.kafka_admin import KafkaAdmin, KafkaAdminError, TopicNotFound
from spark_jobs import translation

from . import audit, filters, read_only, stale_requests, streams, topic_configs
from .connections import destination_admin, source_admin, unreachable
from .errors import ReplicationError, conflict, not_found
from .mirror_states import FOLLOWING, move
from .models import ClusterLink, KafkaCluster, MirrorTopic

log = logging.getLogger(__name__)

State = MirrorTopic.State
Error = MirrorTopic.Error

TOPIC_NAME = re.compile(r"(?!\.{1,2}\Z)[a-zA-Z0-9._-]{1,249}")


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


def mirrored_back(link: ClusterLink) -> dict[str, str]:
    """The topics on the link's source that are themselves mirrors fed from its destination
    (over any link the other way: a bidirectional link's other half, or a link of its own),
    each with the words that say so. Mirroring one over `link` would copy the destination's
    own records back to it, and with automatic mirrors both ways, again and again under ever
    longer names: the loop rule of active-active (README, "Active-active"). A promoted or failed
    over mirror (STOPPED) is an ordinary topic written on the source now, and may be mirrored.
    """
    found = MirrorTopic.objects.filter(
        destination__cluster_id=link.source_cluster_id,
        link__source_cluster_id=link.destination.cluster_id,
    ).exclude(state=MirrorTopic.State.STOPPED)
    return {
        m.mirror_topic: f"a mirror of {link.destination.name}'s topic {m.source_topic} over "
        f"link {m.link.name}"
        for m in found.select_related("link")
    }


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


def snapshot(mirror: MirrorTopic) -> dict:
    return {
        "link": mirror.link.name,
        "source_topic": mirror.source_topic,
        "state": mirror.state,
        "partitions": mirror.num_partitions,
        "config_overrides": mirror.config_overrides,
        "stop_offsets": mirror.stop_offsets,
    }


def running_state(link: ClusterLink, paused: bool) -> str:
    """Where a following mirror belongs, given its link and whether a user paused it."""
    if paused:
        return State.PAUSED
    if link.state == ClusterLink.State.PAUSED:
        return State.LINK_PAUSED
    if link.state == ClusterLink.State.UNAVAILABLE:
        return State.SOURCE_UNAVAILABLE
    return State.ACTIVE


def create_mirror(
    actor: audit.Actor,
    link: ClusterLink,
    source_topic: str,
    *,
    mirror_topic: str | None = None,
    replication_factor: int | None = None,
    configs: dict[str, str] | None = None,
    validate_only: bool = False,
) -> MirrorTopic:
    """Create a read-only mirror of `source_topic` on the link's destination.

    The mirror has the source's partition count and the configs its classes call for, plus
    `configs` as overrides; its replication factor defaults to the destination's default.
    Checked in this order, each refusal saying what to do: the request itself, then what the
    clusters say (the destination's dry run too); only then is the name reserved and the topic
    made.
    """
    name = mirror_topic or link.prefix + source_topic
    target = f"mirror {name} on link {link.name}"
    overrides = dict(configs or {})
    with audit.refusals(actor, "mirror.create", target):
        _check_request(link, source_topic, name, replication_factor, overrides)
        destination, source = destination_admin(link), source_admin(link)
        mirror, wanted = _planned(
            link, source, destination, source_topic, name, replication_factor, overrides
        )
        if validate_only:
            return mirror
        _reserve(mirror)
        _provision(mirror, source, destination, replication_factor, wanted)
    note_declined(link, source_topic, False)
    audit.record(actor, "mirror.create", target, after=snapshot(mirror))
    log.info(
        "Created mirror topic %s of %s over link %s (%d partitions, read-only %s)",
        name,
        source_topic,
        link.name,
        mirror.num_partitions,
        "enforced" if mirror.read_only_enforced else "NOT enforced: no authorizer",
    )
    return mirror


def _check_request(
    link: ClusterLink,
    source_topic: str,
    name: str,
    replication_factor: int | None,
    overrides: dict[str, str],
) -> None:
    """What can be refused before asking a cluster: names, the link's state, the settings."""
    expected = link.prefix + source_topic
    if not TOPIC_NAME.fullmatch(source_topic):
        raise ReplicationError(
            f"Invalid source topic name {source_topic!r}: use 1-249 letters, digits, "
            "'.', '_' or '-'."
        )
    if name != expected:
        raise ReplicationError(
            f"A mirror topic is named after its source topic"
            f"{' with the link prefix ' + repr(link.prefix) if link.prefix else ''}: "
            f"expected {expected!r}, not {name!r}."
        )
    if len(name) > 249:
        raise ReplicationError(f"Mirror topic name {name!r} is longer than 249 characters.")
    if filters.internal_topic(source_topic):
        raise ReplicationError(
            f"{source_topic!r} is an internal topic (of Kafka, a schema registry, Confluent's "
            "services, MirrorMaker 2 or Isthmus), kept by each cluster for itself; it cannot "
            "be mirrored. Consumer offsets travel with consumer.offset.sync.enable, schemas "
            "with schema.sync.enable."
        )
    if link.state == ClusterLink.State.FAILED:
        raise conflict(
            f"Cluster link {link.name!r} has FAILED ({link.error_message}); "
            "fix it before adding mirrors."
        )
    # Kafka's protocol carries it as a 16-bit number
    if replication_factor is not None and not 1 <= replication_factor <= 32767:
        raise ReplicationError("The replication factor must be a whole number from 1 to 32767.")
    topic_configs.check_overrides(overrides)
    taken = MirrorTopic.objects.filter(destination=link.destination, mirror_topic=name).first()
    if taken:
        raise conflict(
            f"Topic {name!r} is already a mirror topic of link {taken.link.name!r} "
            f"on {link.destination.name}."
        )
    back = mirrored_back(link).get(source_topic)
    if back:
        raise conflict(
            f"Source topic {source_topic!r} is {back}: mirroring it would copy "
            f"{link.destination.name}'s own records back to it. Read {link.destination.name}'s "
            "topic itself there. Nothing was changed."
        )


def _planned(
    link: ClusterLink,
    source: KafkaAdmin,
    destination: KafkaAdmin,
    source_topic: str,
    name: str,
    replication_factor: int | None,
    overrides: dict[str, str],
) -> tuple[MirrorTopic, dict[str, str]]:
    """The unsaved mirror and the configs it gets, as both clusters say now: the source is
    the link's, has the topic, and the destination would take the mirror (its dry run)."""
    try:
        existing = destination.list_topic_names()
    except KafkaAdminError as exc:
        raise unreachable("destination", exc) from exc
    _check_source_is_the_links(link, source)
    if name in existing:
        raise _topic_exists(link, name)
    try:
        info = source.describe_topic(source_topic)
        wanted = topic_configs.desired(
            source.topic_configs(source_topic), link.config("topic.config.sync.include"), overrides
        )
    except TopicNotFound as exc:
        raise source_topic_missing(link, source_topic) from exc
    except KafkaAdminError as exc:
        raise unreachable("source", exc) from exc
    try:
        destination.create_topic(
            name, info.partitions, replication_factor, wanted, validate_only=True
        )
    except KafkaAdminError as exc:
        if exc.code == KafkaError.TOPIC_ALREADY_EXISTS:  # made since the look above
            raise _topic_exists(link, name) from exc
        raise ReplicationError(
            f"{link.destination.name} would refuse mirror topic {name!r}: {exc}"
        ) from exc
    mirror = MirrorTopic(
        link=link,
        destination=link.destination,
        source_topic=source_topic,
        mirror_topic=name,
        source_topic_id=info.topic_id,
        num_partitions=info.partitions,
        config_overrides=overrides,
    )
    return mirror, wanted


def _reserve(mirror: MirrorTopic) -> None:
    """Save the mirror's row, which reserves its name, before the destination is touched; the
    link's row locked, so a deletion of the link cannot take this mirror along."""
    link = mirror.link
    try:
        with transaction.atomic():
            if not ClusterLink.objects.select_for_update().filter(pk=link.pk).exists():
                raise not_found(f"Cluster link {link.name!r} was deleted meanwhile.")
            mirror.save()
    except IntegrityError as exc:
        raise conflict(
            f"Topic {mirror.mirror_topic!r} is being created as a mirror already."
        ) from exc


def source_topic_missing(link: ClusterLink, topic: str) -> ReplicationError:
    return not_found(
        f"Source topic {topic!r} does not exist on the source cluster "
        f"{link.source_cluster_id}. Create it there first, or check the name."
    )


def _check_source_is_the_links(link: ClusterLink, source: KafkaAdmin) -> None:
    """The link's address must still reach the cluster the link was made for: a source
    rebuilt, or an address now pointing elsewhere, would mirror another cluster's topic."""
    try:
        answering = source.describe_cluster().cluster_id
    except KafkaAdminError as exc:
        raise unreachable("source", exc) from exc
    if answering != link.source_cluster_id:
        raise conflict(
            f"Link {link.name!r}'s source address now reaches cluster {answering}, not the "
            f"source it was made for ({link.source_cluster_id}); no mirror was created. Check "
            "the link's bootstrap.servers, or make a new link to the cluster that answers."
        )


def _topic_exists(link: ClusterLink, name: str) -> ReplicationError:
    return conflict(
        f"Topic {name!r} already exists on {link.destination.name}. Delete it first "
        "(for example after a promote), or mirror into another cluster."
    )


def _provision(
    mirror: MirrorTopic,
    source: KafkaAdmin,
    admin: KafkaAdmin,
    replication_factor: int | None,
    configs: dict,
) -> None:
    """Make the read-only topic and pin where it starts; on any failure undo every step this
    call made, and only those, and forget the mirror."""
    name = mirror.mirror_topic
    had: frozenset[read_only.Rule] = frozenset()  # read-only ACLs on the name before: not ours
    acls_set = topic_made = taken = False
    try:
        had = read_only.present(admin, name)
        acls_set = True  # enforce may fail half-way: what it set is ours to lift
        mirror.read_only_enforced = read_only.enforce(admin, name)
        # From here a topic of the name is taken to be ours: even a create that timed out may
        # have made it, and the name was free when create_mirror looked.
        topic_made = True
        try:
            admin.create_topic(name, mirror.num_partitions, replication_factor, configs)
        except KafkaAdminError as exc:
            # Someone made a topic of the name since create_mirror looked: it is theirs.
            taken = exc.code == KafkaError.TOPIC_ALREADY_EXISTS
            topic_made = not taken
            raise
        info = _wait_for_topic(admin, name)
        mirror.replication_factor = info.replication_factor
        _pin_start(mirror, source, admin, info.topic_id)
    except (KafkaAdminError, translation.StoreFailed) as exc:
        try:
            if topic_made:
                with contextlib.suppress(TopicNotFound):
                    admin.delete_topic(name)
            if acls_set:
                read_only.lift(admin, name, keep=had)
        except KafkaAdminError:
            log.exception("Could not undo the half-made mirror topic %s", name)
        mirror.delete()
        if taken:
            raise _topic_exists(mirror.link, name) from exc
        raise ReplicationError(
            f"Creating mirror topic {name!r} failed and was undone: {exc}", 503
        ) from exc
    mirror.save(update_fields=["read_only_enforced", "replication_factor"])
    move(mirror, "provision", running_state(mirror.link, False))


def _pin_start(mirror: MirrorTopic, source: KafkaAdmin, admin: KafkaAdmin, topic_id: str) -> None:
    """A mirror that starts at the latest offset or at a time (mirror.start.offset.spec)
    records, per partition, the source offset it starts from now, as its first offset
    translation entry; the link's stream follows it."""
    spec = mirror.link.config("mirror.start.offset.spec")
    if spec == "earliest":
        return  # the stream starts each partition at its log start
    partitions = [(mirror.source_topic, p) for p in range(mirror.num_partitions)]
    starts = source.offsets(partitions)
    if spec != "latest":
        at_ms = int(datetime.fromisoformat(spec).timestamp() * 1000)
        found = source.offsets(partitions, at_ms)
        starts = {tp: offset if offset >= 0 else starts[tp] for tp, offset in found.items()}
    streams.ensure_translation_topic(admin)
    translation.store(
        mirror.link.destination.connection_config(),
        [(topic_id, p, translation.Entry(o, 0)) for (_, p), o in starts.items() if o > 0],
    )


def _wait_for_topic(admin: KafkaAdmin, name: str, attempts: int = 20):
    """A new topic can take a moment to show in the metadata of every broker."""
    for _ in range(attempts - 1):
        try:
            return admin.describe_topic(name)
        except TopicNotFound:
            time.sleep(0.1)
    return admin.describe_topic(name)


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
            note_declined(mirror.link, mirror.source_topic, True)
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


def note_declined(link: ClusterLink, source_topic: str, declined: bool) -> None:
    """Remember that a user deleted the mirror of `source_topic` (or forget it, once they
    mirror it again), so auto-create leaves it alone (see `auto_mirrors`)."""
    with transaction.atomic():
        row = ClusterLink.objects.select_for_update().filter(pk=link.pk).first()
        if row is None:
            return
        topics = [t for t in row.declined_topics if t != source_topic]
        if declined:
            topics.append(source_topic)
        if topics != row.declined_topics:
            ClusterLink.objects.filter(pk=link.pk).update(declined_topics=topics)
    link.declined_topics = topics


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
    mirror.save(update_fields=["num_partitions"])
    log.info("Grew mirror topic %s to %d partitions", mirror.mirror_topic, partitions)
    audit.record(
        _SYNCER,
        "mirror.grow",
        f"mirror {mirror.mirror_topic}",
        before=before,
        after=snapshot(mirror),
    )


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
    before, and say so in the log and the audit trail. Returns whether anything new was lost."""
    lost = {p: list(r) for p, r in (mirror.records_lost or {}).items()}
    for partition, (first, end) in found.items():
        had = lost.get(str(partition))
        merged = [min(first, had[0]), max(end, had[1])] if had else [first, end]
        lost[str(partition)] = merged
    if lost == (mirror.records_lost or {}):
        return False
    before = {"records_lost": mirror.records_lost}
    MirrorTopic.objects.filter(pk=mirror.pk).update(records_lost=lost)
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
        note_declined(mirror.link, mirror.source_topic, True)
    log.warning("Mirror topic %s was deleted on the destination; mirroring ended", mirror)
    audit.record(_SYNCER, "mirror.forget", f"mirror {mirror.mirror_topic}", before=before)
