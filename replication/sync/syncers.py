"""The syncers: for each link, at the link's own intervals, check that the source answers,
follow source partitions and topic identity, mirror new source topics (auto-create), and keep
mirror topic configs, consumer offsets, ACLs and schemas in sync.

Celery beat calls `run_due_syncs` every second; each syncer runs only when its interval
(availability.check.ms, metadata.max.age.ms, topic.config.sync.ms, consumer.offset.sync.ms,
acl.sync.ms, schema.sync.ms) has passed. What stops a syncer from doing its work is kept on the link
(`sync_problems`, shown on its page) until a run of it succeeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from replication.core import read_only
from replication.core.errors import ReplicationError
from replication.engine import status
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, MirrorTopic
from replication.schemas import link_schema_sync, schema_links
from replication.states.mirror_states import SYNCED
from replication.sync import acl_sync, auto_mirrors
from replication.topics import link_availability, mirrors, offset_sync

log = logging.getLogger(__name__)


def run_due_syncs(now: datetime | None = None) -> None:
    for link in ClusterLink.objects.select_related("destination"):
        try:
            sync_link(link, now or timezone.now())
        except (KafkaAdminError, ReplicationError) as exc:
            log.warning("Syncing cluster link %s: %s", link.name, exc)
        except Exception:  # one broken link must not stop the others
            log.exception("Syncing cluster link %s failed", link.name)


def _due(last: datetime | None, interval_ms: int, now: datetime) -> bool:
    return last is None or (now - last).total_seconds() * 1000 >= interval_ms


OFFSETS, ACLS, AUTO_CREATE = offset_sync.PROBLEM, "ACLs", "auto-create"
SCHEMAS = schema_links.PROBLEM


def sync_link(link: ClusterLink, now: datetime) -> None:
    if link.state == ClusterLink.State.PAUSED:
        return
    _forget_disabled(link)
    check_due = _due(link.availability_checked_at, link.int_config("availability.check.ms"), now)
    metadata_due = _due(link.metadata_refreshed_at, link.int_config("metadata.max.age.ms"), now)
    configs_due = _due(link.configs_synced_at, link.int_config("topic.config.sync.ms"), now)
    offsets_due, acls_due, schemas_due, waited = _syncers_due(link, now)
    work = metadata_due or configs_due or offsets_due or acls_due or schemas_due or waited
    if not (check_due or work):
        return
    source = source_admin(link)  # one client per end for all of this run's syncers
    if check_due:
        check_source(link, now, source)
        link.refresh_from_db()
    # While the source fails its checks, the other syncers would only wait out their timeouts
    # (seconds each, on the one worker), delaying the next check: they run once a check passes.
    if link.state != ClusterLink.State.ACTIVE or not work or link.availability_failures:
        return
    destination = destination_admin(link)
    _follow_topics(link, now, source, destination, metadata_due, configs_due)
    # Each marked as run before it runs: one that fails waits its interval, not a second.
    for due, stamp, syncer, sync in (
        (
            offsets_due,
            "offsets_synced_at",
            OFFSETS,
            lambda: offset_sync.sync_offsets(link, now, source, destination),
        ),
        (acls_due, "acls_synced_at", ACLS, lambda: acl_sync.sync_acls(link, source, destination)),
        (
            schemas_due,
            "schemas_synced_at",
            SCHEMAS,
            lambda: link_schema_sync.sync_link_schemas(link),
        ),
    ):
        if due:
            ClusterLink.objects.filter(pk=link.pk).update(**{stamp: now})
            _run(link, syncer, sync)
    if waited:
        _run(link, SCHEMAS, lambda: link_schema_sync.sync_link_schemas(link, waited))


def _follow_topics(
    link: ClusterLink,
    now: datetime,
    source: KafkaAdmin,
    destination: KafkaAdmin,
    metadata_due: bool,
    configs_due: bool,
) -> None:
    """Follow the source's metadata (mirroring new topics, if auto-create is on) and configs."""
    if metadata_due:
        refresh_metadata(link, now, source, destination)
        if auto_mirrors.enabled(link):
            _run(link, AUTO_CREATE, lambda: auto_mirrors.create_wanted(link, source))
    if configs_due:
        sync_topic_configs(link, now, source, destination)


def _syncers_due(link: ClusterLink, now: datetime) -> tuple[bool, bool, bool, list[int]]:
    """Whether offsets, ACLs and schemas are due, and the schema ids records wait for (synced
    at once, not at the next interval)."""
    offsets_due = offset_sync.enabled(link) and _due(
        link.offsets_synced_at, link.int_config("consumer.offset.sync.ms"), now
    )
    acls_due = acl_sync.enabled(link) and _due(
        link.acls_synced_at, link.int_config("acl.sync.ms"), now
    )
    schemas_due = schema_links.enabled(link) and _due(
        link.schemas_synced_at, link.int_config("schema.sync.ms"), now
    )
    waited = schema_links.enabled(link) and not schemas_due and status.schema_waits(link)
    return offsets_due, acls_due, schemas_due, waited or []


def _run(link: ClusterLink, syncer: str, work: Callable[[], object]) -> None:
    """Run one syncer; what stops it is noted on the link (and logged) until it works again."""
    try:
        work()
    except (KafkaAdminError, ReplicationError) as exc:
        log.warning("%s sync of cluster link %s: %s", syncer, link.name, exc)
        _note_problem(link, syncer, str(exc))
    else:
        _note_problem(link, syncer, None)


def _note_problem(link: ClusterLink, syncer: str, problem: str | None) -> None:
    problems = {k: v for k, v in link.sync_problems.items() if k != syncer}
    if problem:
        problems[syncer] = problem
    if problems != link.sync_problems:
        ClusterLink.objects.filter(pk=link.pk).update(sync_problems=problems)
        link.sync_problems = problems


def _forget_disabled(link: ClusterLink) -> None:
    """A syncer turned off says nothing more on the link, and its groups are no longer shown."""
    for syncer, on in (
        (OFFSETS, offset_sync.enabled(link)),
        (ACLS, acl_sync.enabled(link)),
        (AUTO_CREATE, auto_mirrors.enabled(link)),
        (SCHEMAS, schema_links.enabled(link)),
    ):
        if not on and syncer in link.sync_problems:
            _note_problem(link, syncer, None)
    # Only once after offsets synced (offsets_synced_at set): no query every second after.
    if not offset_sync.enabled(link) and link.offsets_synced_at is not None:
        link.group_syncs.all().delete()
        ClusterLink.objects.filter(pk=link.pk).update(offsets_synced_at=None)
        link.offsets_synced_at = None


def check_source(link: ClusterLink, now: datetime, source: KafkaAdmin | None = None) -> None:
    """Probe the source; after the threshold of failures in a row the link is UNAVAILABLE,
    and the first success brings it back."""
    try:
        cluster_id = (source or source_admin(link)).describe_cluster().cluster_id
        if cluster_id != link.source_cluster_id:
            raise KafkaAdminError(
                f"bootstrap.servers now reaches cluster {cluster_id}, not the link's source "
                f"{link.source_cluster_id}."
            )
    except (KafkaAdminError, ReplicationError) as exc:
        failures = link.availability_failures + 1
        ClusterLink.objects.filter(pk=link.pk).update(
            availability_failures=failures, availability_checked_at=now
        )
        threshold = link.int_config("availability.check.consecutive.failure.threshold")
        log.warning(
            "Source of cluster link %s failed its availability check (%d of %d): %s",
            link.name,
            failures,
            threshold,
            exc,
        )
        if failures >= threshold:
            link_availability.mark_unavailable(
                link, link_availability.link_error_code(exc), str(exc)
            )
        return
    ClusterLink.objects.filter(pk=link.pk).update(
        availability_failures=0, availability_checked_at=now
    )
    if link.state == ClusterLink.State.UNAVAILABLE:
        link_availability.mark_available(link)


def refresh_metadata(
    link: ClusterLink,
    now: datetime,
    source: KafkaAdmin | None = None,
    destination: KafkaAdmin | None = None,
) -> None:
    """Follow each mirror's source topic: its partitions, its identity, its existence."""
    ClusterLink.objects.filter(pk=link.pk).update(metadata_refreshed_at=now)
    source = source or source_admin(link)
    destination = destination or destination_admin(link)
    for mirror in link.mirrors.filter(state__in=SYNCED):
        _for_each_mirror(mirror, lambda m: _follow_source(m, source, destination, now))


def _for_each_mirror(mirror: MirrorTopic, work: Callable[[MirrorTopic], None]) -> None:
    """One mirror's trouble (a refused change, a timeout) must not hold up the others."""
    try:
        work(mirror)
    except (KafkaAdminError, ReplicationError) as exc:
        log.warning("Syncing mirror topic %s: %s", mirror.mirror_topic, exc)


def _follow_source(
    mirror: MirrorTopic, source: KafkaAdmin, destination: KafkaAdmin, now: datetime
) -> None:
    try:
        mirror_partitions = destination.describe_topic(mirror.mirror_topic).partitions
    except TopicNotFound:
        mirrors.forget_mirror(mirror, destination)
        return
    try:
        info = source.describe_topic(mirror.source_topic)
    except TopicNotFound:
        mirrors.note_source_missing(mirror, now)
        return
    mirrors.note_source_present(mirror)
    _keep_read_only(mirror, destination)
    if info.topic_id != mirror.source_topic_id:
        mirrors.fail_mirror(
            mirror,
            MirrorTopic.Error.SOURCE_TOPIC_ID_CHANGED,
            f"Source topic {mirror.source_topic!r} was deleted and re-created (topic id "
            f"{mirror.source_topic_id} is now {info.topic_id}). Delete this mirror and "
            "create it again to mirror the new topic.",
        )
    elif info.partitions < mirror_partitions:
        mirrors.fail_mirror(
            mirror,
            MirrorTopic.Error.SOURCE_PARTITIONS_DECREASED,
            f"Source topic {mirror.source_topic!r} has {info.partitions} partitions, fewer "
            f"than the mirror's {mirror_partitions}; partitions cannot be removed.",
        )
    elif info.partitions > min(mirror.num_partitions, mirror_partitions):
        # The engine grows a mirror topic as soon as it sees its source grow: then only the
        # mirror's record follows.
        mirrors.grow_mirror(mirror, destination, info.partitions, mirror_partitions)


def _keep_read_only(mirror: MirrorTopic, destination: KafkaAdmin) -> None:
    """Put back read-only rules a mirror lacks (removed by hand, or new since it was made). A
    promote that stopped the mirror meanwhile lifted them: then they go again."""
    if not mirror.read_only_enforced or read_only.complete(destination, mirror.mirror_topic):
        return
    read_only.enforce(destination, mirror.mirror_topic)
    now = MirrorTopic.objects.filter(pk=mirror.pk).values_list("state", flat=True).first()
    if now in (None, MirrorTopic.State.STOPPED):
        read_only.lift(destination, mirror.mirror_topic)
    else:
        log.warning("Put back the read-only ACLs of mirror topic %s", mirror.mirror_topic)


def sync_topic_configs(
    link: ClusterLink,
    now: datetime,
    source: KafkaAdmin | None = None,
    destination: KafkaAdmin | None = None,
) -> None:
    """Make each mirror's synced configs equal to its source topic's."""
    ClusterLink.objects.filter(pk=link.pk).update(configs_synced_at=now)
    source = source or source_admin(link)
    destination = destination or destination_admin(link)
    include = link.config("topic.config.sync.include")
    for mirror in link.mirrors.filter(state__in=SYNCED):
        _for_each_mirror(
            mirror, lambda m: mirrors.sync_from_source(m, source, destination, include)
        )
