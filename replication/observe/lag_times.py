"""A mirror partition's lag in time, the recovery point: the age of the oldest source record the
mirror does not hold yet (0 when it holds them all), from that record's timestamp.

The record is the source's at the offset the mirror's end stands for (`PartitionStatus.
first_missing`, through the offset translation). Only the beat's sample reads timestamps, with one
consumer per source (per link's client config) for all the partitions behind, fetching one
record of each; and only where the record is not the one read before: a paused or stuck mirror
costs one read, then its age grows with the clock. A page or API call that reads the offsets
keeps the timestamp when the oldest missing record is still the same one, and otherwise shows
the age the last sample measured (at most a sample old), so nothing reads records per page view.

Timestamps are the producers' (CreateTime) unless the topic has the broker stamp them
(LogAppendTime): a producer that stamps events with their own time makes this the events' age.
A timestamp ahead of the console's clock by less than FUTURE_SKEW_MS counts as age 0 (clocks
differ a little); further ahead, or missing (-1, an old message format), the age is unknown
(-1), and so is any partition whose offsets or record could not be read."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Protocol, TypeVar

from confluent_kafka import KafkaException
from django.conf import settings

from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError
from replication.kafka.connections import source_records
from replication.models import ClusterLink, MirrorTopic

log = logging.getLogger(__name__)


# What is read here of lag.py's statuses and readings (lag.py imports this module).
class _Partition(Protocol):
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def partition(self) -> int: ...
    @property
    def lag(self) -> int: ...
    @property
    def first_missing(self) -> int: ...
    @property
    def oldest_timestamp(self) -> int: ...


class _Status(Protocol):
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def mirror(self) -> MirrorTopic: ...
    @property
    def partitions(self) -> Sequence[_Partition]: ...
    @property
    def at(self) -> float: ...


class _Kept(Protocol):
    @property
    def first_missing(self) -> int: ...
    @property
    def oldest_timestamp(self) -> int: ...
    @property
    def lag_ms(self) -> int: ...


class _Reading(Protocol):
    @property
    def partitions(self) -> Mapping[int, _Kept]: ...


S = TypeVar("S", bound=_Status)
P = TypeVar("P", bound=_Partition)

UNKNOWN = -1
FUTURE_SKEW_MS = 60_000
# `PartitionStatus.oldest_timestamp` when no committed record follows the mirror's end on the
# source (only transaction markers or compacted records): nothing to copy, age 0.
NONE_LEFT = -2


def age_ms(timestamp: int, now_ms: int) -> int:
    """How old a record stamped `timestamp` is at `now_ms`; UNKNOWN when it cannot be told."""
    if timestamp == NONE_LEFT:
        return 0
    if timestamp < 0 or timestamp > now_ms + FUTURE_SKEW_MS:
        return UNKNOWN
    return max(0, now_ms - timestamp)


def lag_ms(records_behind: int, timestamp: int, now_ms: int) -> int:
    """A partition's lag in time: 0 caught up, UNKNOWN when its record lag is."""
    if records_behind == 0:
        return 0
    if records_behind < 0:
        return UNKNOWN
    return age_ms(timestamp, now_ms)


def fill(statuses: list[S], before: Mapping[int, Mapping[str, _Reading]], *, read: bool) -> list[S]:
    """Each partition's lag in time set: from the timestamp read before (`before`, the link's
    latest readings by link pk) while the oldest missing record is the same one; else, with
    `read`, from the source now (one consumer per source config, and one more for each further
    offset of a partition that links from that source lag at); else the age the last reading
    had."""
    statuses = [
        replace(s, partitions=[_known(p, _previous(before, s), s.at) for p in s.partitions])
        for s in statuses
    ]
    if not read:
        return statuses
    # Per source config, the offsets wanted of each partition: links that read one source alike
    # may lag on one topic at different offsets, and each wants its own record's timestamp.
    wanted: dict[tuple, dict[tuple[str, int], set[int]]] = {}
    links, configs = {}, {}
    for s in statuses:
        for p in s.partitions:
            if p.lag > 0 and p.oldest_timestamp == UNKNOWN:
                if s.mirror.link_id not in configs:
                    client = s.mirror.link.source_client_config()
                    configs[s.mirror.link_id] = tuple(sorted(client.items()))
                config = configs[s.mirror.link_id]
                links[config] = s.mirror.link
                offsets = wanted.setdefault(config, {}).setdefault(
                    (s.mirror.source_topic, p.partition), set()
                )
                offsets.add(p.first_missing)
    found: dict[tuple[str, int, int], int | None] = {}
    for config, wanted_offsets in wanted.items():
        for positions in _rounds(wanted_offsets):
            for (topic, partition), stamp in _read(links[config], positions).items():
                found[topic, partition, positions[topic, partition]] = stamp
    if not found:
        return statuses
    return [replace(s, partitions=[_read_now(p, s, found) for p in s.partitions]) for s in statuses]


def _rounds(wanted: Mapping[tuple[str, int], set[int]]) -> list[dict[tuple[str, int], int]]:
    """The reads that fetch every offset `wanted` of each (topic, partition): a consumer reads a
    partition at one offset at a time, so as many reads as one partition has offsets wanted
    (one, unless links from one source stand at different offsets of it)."""
    ordered = {tp: sorted(offsets) for tp, offsets in wanted.items()}
    depth = max((len(offsets) for offsets in ordered.values()), default=0)
    return [{tp: o[i] for tp, o in ordered.items() if i < len(o)} for i in range(depth)]


def _previous(before: Mapping[int, Mapping[str, _Reading]], s: _Status) -> _Reading | None:
    return before.get(s.mirror.link_id, {}).get(s.mirror.mirror_topic)


def _known(p: P, previous: _Reading | None, at: float) -> P:
    """The partition with what is known without reading: caught up, or the same oldest record
    as before (its timestamp), or the age last measured."""
    now_ms = int(at * 1000)
    if p.lag <= 0:
        return replace(p, lag_ms=lag_ms(p.lag, UNKNOWN, now_ms))
    was = previous.partitions.get(p.partition) if previous else None
    if was is None:
        return p
    if was.first_missing == p.first_missing and was.oldest_timestamp != UNKNOWN:
        stamp = was.oldest_timestamp
        return replace(p, oldest_timestamp=stamp, lag_ms=lag_ms(p.lag, stamp, now_ms))
    return replace(p, lag_ms=was.lag_ms)


def _read_now(p: P, s: _Status, found: dict[tuple[str, int, int], int | None]) -> P:
    key = (s.mirror.source_topic, p.partition, p.first_missing)
    if p.lag <= 0 or p.oldest_timestamp != UNKNOWN or key not in found:
        return p
    stamp = found[key]
    stamp = NONE_LEFT if stamp is None else stamp
    return replace(p, oldest_timestamp=stamp, lag_ms=lag_ms(p.lag, stamp, int(s.at * 1000)))


def _read(
    link: ClusterLink, positions: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int | None]:
    """The timestamps at `positions` on the link's source; none where it did not answer (the
    lag in time stays unknown until the next sample)."""
    try:
        return source_records(link).first_timestamps(
            positions, timeout_s=settings.KAFKA_ADMIN_TIMEOUT
        )
    except (KafkaException, KafkaAdminError, ReplicationError) as exc:
        log.warning(
            "Could not read the timestamps of the oldest records not yet mirrored on link %s's "
            "source (%s); their lag in seconds is unknown until the next sample.",
            link.name,
            exc,
        )
        return {}


def largest(values: Iterable[int]) -> int:
    """The largest known lag in time (UNKNOWN when none is known)."""
    return max((v for v in values if v >= 0), default=UNKNOWN)


def mirror_lag_ms(partitions: Iterable[tuple[int, int]]) -> int:
    """A mirror's lag in time from its partitions' (lag in records, lag in time): the largest,
    or UNKNOWN when a partition behind has no known lag in time (it may be the furthest behind:
    a mirror partly known is not known, and ends no RPO breach)."""
    pairs = list(partitions)
    if any(records > 0 and ms < 0 for records, ms in pairs):
        return UNKNOWN
    return largest(ms for _, ms in pairs)
