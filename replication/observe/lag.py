"""A mirror's lag, from one source of truth: the source's end offset less the mirror's, per
partition, read from both clusters. Every reading is kept in Redis as the mirror's latest
(`isthmus:lag:<link id>`, a hash by mirror topic), whoever made it: the beat samples every
mirror with a source every `history.SAMPLE_S` seconds, whether its link's stream runs or not,
and a page or API call that reads the clusters now stores what it read. The mirror page's
table and chart, the lists, the overview and `/metrics` all show these readings, so they agree.

The stream's own report only adds what the clusters cannot say: where offsets are translated
(a mirror started above offset 0, or gaps in the source), and how far the stream has read past
records that compaction or transactions removed. The lag in time (the age of the oldest source
record not yet mirrored) is kept beside the lag in records: `lag_times` says how it is read."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import redis
from django.utils import timezone

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError
from replication.core.redis_channel import client
from replication.engine import status
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, MergeFlow, MirrorTopic, is_canary
from replication.observe import history, lag_partitions, lag_times, rpo, topic_ends
from replication.observe.lag_partitions import PartitionStatus
from replication.states.mirror_states import FOLLOWING
from replication.topics import flow_offsets, merge_flows
from replication.topics import mirrors as mirrors_domain
from spark_jobs.control import text

log = logging.getLogger(__name__)
State = MirrorTopic.State


@dataclass(frozen=True)
class MirrorStatus:
    mirror: MirrorTopic
    partitions: list[PartitionStatus] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Paused, but the link's stream has not let go of it yet: for a few seconds it may still
    # copy what it had fetched.
    letting_go: bool = False
    at: float = 0.0  # when it was read, in seconds since the epoch

    @property
    def schema_waits(self) -> list[str]:
        """The stream's last word of partitions waiting for a schema, of those still behind:
        a caught-up partition waits for nothing, whatever the stream said before."""
        return [p.schema_wait for p in self.partitions if p.schema_wait and p.lag != 0]

    @property
    def max_lag(self) -> int:
        return max((p.lag for p in self.partitions), default=-1)

    @property
    def total_lag(self) -> int:
        """The sum over the partitions read on both ends (-1 when none was)."""
        known = [p.lag for p in self.partitions if p.lag >= 0]
        return sum(known) if known else -1

    @property
    def max_lag_ms(self) -> int:
        """Its lag in time: the largest of its partitions' (-1 unknown: a partition behind has
        none known)."""
        return lag_times.mirror_lag_ms((p.lag, p.lag_ms) for p in self.partitions)

    @property
    def known_lag_ms(self) -> int:
        """The largest lag in time known of its partitions: the least it is behind (-1: none
        known)."""
        return lag_times.largest(p.lag_ms for p in self.partitions)


class PartitionReading(NamedTuple):
    """A partition's lag as read (kept in Redis as a JSON list)."""

    lag: int
    source_end: int
    mirror_end: int
    translated: bool
    lag_ms: int = -1  # its lag in time; -1 unknown
    first_missing: int = -1  # the source offset of the oldest record not yet mirrored
    oldest_timestamp: int = -1  # that record's timestamp (lag_times), -1 not read
    last_fetch: int = -1  # the source high watermark at the stream's last fetch, -1 unknown


@dataclass(frozen=True)
class Reading:
    """A mirror's lag as last read from both clusters (kept in Redis)."""

    at: float
    # partitions one end did not answer for are left out
    partitions: dict[int, PartitionReading]
    errors: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(p[0] for p in self.partitions.values())

    @property
    def max_lag_ms(self) -> int:
        """Its lag in time: the largest of its partitions' (-1 unknown: a partition behind has
        none known)."""
        return lag_times.mirror_lag_ms((p.lag, p.lag_ms) for p in self.partitions.values())

    @property
    def largest(self) -> tuple[int, int] | None:
        """(lag, partition) of the partition furthest behind."""
        return max(((p[0], n) for n, p in self.partitions.items()), default=None)


def describe_mirror(mirror: MirrorTopic) -> MirrorStatus:
    return describe_mirrors([mirror])[0]


def describe_mirrors(
    mirrors: Iterable[MirrorTopic], *, verifying: bool = False
) -> list[MirrorStatus]:
    """Per partition of each mirror: the destination's log end offset and the source's high
    watermark, read from the clusters now, and the lag between them; each reading is stored as
    the mirror's latest, with each partition's lag in time (`lag_times.fill`, from the last
    readings). `verifying` (the beat's sample) reads the source's log starts too, so that
    `PartitionStatus.lost` can tell, and the timestamps the lag in time needs.

    A few requests per cluster end serve all the mirrors on it (`_read_ends`); an end that did
    not answer is not asked again, so a source that is down costs one timeout, not one per
    mirror."""
    mirrors = list(mirrors)
    at = time.time()
    errors: dict[int, list[str]] = {m.pk: [] for m in mirrors}
    dest = _read_ends(
        "Destination",
        mirrors,
        lambda m: m.destination_id,
        destination_admin,
        lambda m: m.mirror_topic,
        errors,
    )
    with_source = [m for m in mirrors if m.state != State.STOPPED]
    source = _read_ends(
        "Source",
        with_source,
        lambda m: m.link_id,
        source_admin,
        lambda m: m.source_topic,
        errors,
        starts=verifying,
    )
    reports: dict[int, status.Progress] = {}
    stored: dict[int, dict[str, Reading]] = {}
    statuses = []
    now_ms = int(at * 1000)
    for mirror in mirrors:
        if mirror.link_id not in reports:
            reports[mirror.link_id] = status.progress(mirror.link)
        report = reports[mirror.link_id]
        if mirror.link_id not in stored:  # the offsets' mode, unreported; the lag in time
            stored[mirror.link_id] = latest(mirror.link)
        before = stored.get(mirror.link_id, {}).get(mirror.mirror_topic)
        following = mirror.state in FOLLOWING
        reported = report.partitions.get(mirror.mirror_topic, {}) if following else {}
        dest_offsets = dest.get(mirror.pk, {})
        source_offsets = source.get(mirror.pk, {})
        # `at` was read before the clusters were asked: a fetch reported since is "just now".
        since_fetch = max(0, now_ms - report.fetched_at_ms) if report.fetched_at_ms else -1
        statuses.append(
            MirrorStatus(
                mirror,
                [
                    lag_partitions.partition_status(
                        mirror,
                        p,
                        dest_offsets.get(p, -1),
                        source_offsets.get(p, -1),
                        reported.get(str(p)),
                        since_fetch,
                        verifying
                        and before is not None
                        and p in before.partitions
                        and not before.partitions[p].translated,
                        _kept_fetch(before, p),
                    )
                    for p in range(len(dest_offsets) or mirror.num_partitions)
                ],
                errors[mirror.pk],
                letting_go=mirror.state in (State.PAUSED, State.LINK_PAUSED)
                and mirror.mirror_topic in report.writing,
                at=at,
            )
        )
    statuses = lag_times.fill(statuses, stored, read=verifying)
    store(statuses)
    return statuses


def _kept_fetch(before: Reading | None, partition: int) -> int:
    """The last fetch's source high watermark the mirror's latest reading kept for
    `partition` (-1: none), for a stream that has not fetched since it started."""
    if before is None or partition not in before.partitions:
        return -1
    return before.partitions[partition].last_fetch


def _read_ends(
    side: str,
    mirrors: list[MirrorTopic],
    end_of: Callable[[MirrorTopic], int],
    connect: Callable[[ClusterLink], KafkaAdmin],
    topic_of: Callable[[MirrorTopic], str],
    errors: dict[int, list[str]],
    *,
    starts: bool = False,
) -> dict[int, dict]:
    """Per mirror (by pk), each partition's end offset on one side (with `starts`, its
    (end, log start)): per cluster end, one request for the topics' partitions as they are now
    (a source may have grown them before the mirror did) and one for their ends (and one for
    their starts)."""
    by_end: dict[int, list[MirrorTopic]] = {}
    for mirror in mirrors:
        by_end.setdefault(end_of(mirror), []).append(mirror)
    found: dict[int, dict] = {}
    for group in by_end.values():
        try:
            admin = connect(group[0].link)
            topics = admin.describe_topics(topic_of(m) for m in group)
            partitions = [
                (name, p) for name, info in topics.items() for p in range(info.partitions)
            ]
            # Each partition's end, or with `starts` (end, log start).
            offsets: dict[tuple[str, int], Any] = admin.offsets(partitions)
            if starts:  # (end, log start)
                first = admin.offsets(partitions, "earliest")
                offsets = {tp: (end, first.get(tp, -1)) for tp, end in offsets.items()}
        except (ReplicationError, KafkaAdminError) as exc:
            for mirror in group:
                errors[mirror.pk].append(f"{side}: {exc}")
            continue
        for mirror in group:
            topic = topic_of(mirror)
            if topic not in topics:
                errors[mirror.pk].append(
                    f"{side}: Could not describe topic {topic!r}: no such topic."
                )
                continue
            found[mirror.pk] = {p: o for (t, p), o in offsets.items() if t == topic}
    return found


# --- the store ----------------------------------------------------------------------------


def _key(link_id) -> str:
    return f"isthmus:lag:{link_id}"


KEEP_S = 24 * 3600  # a link nobody samples any more (deleted) loses its readings after a day


def reading(status: MirrorStatus) -> Reading:
    return Reading(
        status.at,
        {
            p.partition: PartitionReading(
                p.lag,
                p.source_high_watermark,
                p.dest_log_end_offset,
                p.translated,
                p.lag_ms,
                p.first_missing,
                p.oldest_timestamp,
                p.last_fetch_source_high_watermark,
            )
            for p in status.partitions
            if p.lag >= 0
        },
        tuple(status.errors),
    )


def store(statuses: list[MirrorStatus]) -> None:
    """Keep each mirror's reading as its latest (a stopped mirror has none: nothing to copy)."""
    pipe = client().pipeline()
    for s in statuses:
        key, mirror = _key(s.mirror.link.link_id), s.mirror.mirror_topic
        if s.mirror.state == State.STOPPED:
            pipe.hdel(key, mirror)
            continue
        r = reading(s)
        value = {"at": round(r.at, 1), "partitions": r.partitions, "errors": r.errors}
        pipe.hset(key, mirror, json.dumps(value))
        pipe.expire(key, KEEP_S)
        # The source's ends over time: whether producers still write it (approval plans).
        ends = {p.partition: p.source_high_watermark for p in s.partitions}
        topic_ends.keep(
            pipe,
            s.mirror.link.source_cluster_id,
            s.mirror.source_topic,
            {p: end for p, end in ends.items() if end >= 0},
            s.at,
        )
    try:
        pipe.execute()
    except redis.RedisError as exc:  # the pages still show what they read
        log.warning("Could not keep the lag just read: %s", exc)


def latest(link: ClusterLink) -> dict[str, Reading]:
    """Each of the link's mirrors' latest reading, by mirror topic. One Redis read."""
    try:
        raw = client().hgetall(_key(link.link_id))
    except redis.RedisError:
        return {}
    return {text(mirror): _reading_of(value) for mirror, value in raw.items()}


def latest_of(mirror: MirrorTopic) -> Reading | None:
    """One mirror's latest reading (None: not read yet). One Redis read of it alone."""
    try:
        raw = client().hget(_key(mirror.link.link_id), mirror.mirror_topic)
    except redis.RedisError:
        return None
    return _reading_of(raw) if raw is not None else None


def _reading_of(value: bytes | str) -> Reading:
    r = json.loads(value)
    return Reading(
        r["at"],
        {int(p): PartitionReading(*v) for p, v in r["partitions"].items()},
        tuple(r["errors"]),
    )


def sample_all() -> None:
    """The beat's sample: every mirror that has a source, read from both clusters now and
    stored, whether its link's stream runs or not, with its lag in time; source records deleted
    before the mirror copied them noted (`mirrors.note_records_lost`); each link's mirrors
    checked against its RPO target (`rpo.note`); then a point of each link's and mirror's
    history (none for a mirror neither end answered for: its chart shows a gap)."""
    now = time.time()
    mirrors = MirrorTopic.objects.exclude(state=State.STOPPED).select_related(
        "link", "link__destination", "destination"
    )
    lags: dict[int, dict[str, tuple[int, int, int] | None]] = {}
    least: dict[int, dict[str, int]] = {}  # what is known of each mirror's lag in time
    for s in describe_mirrors(mirrors, verifying=True):
        lost = {p.partition: p.lost for p in s.partitions if p.lost is not None}
        if lost:
            mirrors_domain.note_records_lost(s.mirror, lost)
        known = s.total_lag >= 0
        lags.setdefault(s.mirror.link_id, {})[s.mirror.mirror_topic] = (
            (s.total_lag, s.max_lag, s.max_lag_ms) if known else None
        )
        least.setdefault(s.mirror.link_id, {})[s.mirror.mirror_topic] = s.known_lag_ms
    flowing = set(MergeFlow.objects.values_list("link_id", flat=True))
    for link in ClusterLink.objects.select_related("destination"):
        link_lags = lags.get(link.pk, {})
        # A drill's canary is no user's data: its catching up breaches no RPO target.
        own = {m: lag for m, lag in link_lags.items() if not is_canary(link, m)}
        at_least = least.get(link.pk, {})
        rpo.note(
            link,
            {m: rpo.checked_ms(lag[2] if lag else -1, at_least[m], link) for m, lag in own.items()},
        )
        flows = None
        if link.pk in flowing:
            by_name = merge_flows.statuses(link)
            flows = {flow: by_name[flow.name] for flow in link.flows.all()}
            for flow, found in flows.items():
                flow_offsets.record_checkpoints(flow, found, timezone.now())
        history.record(link, link_lags, now, flows)
    if flowing:
        flow_offsets.thin(timezone.now())
