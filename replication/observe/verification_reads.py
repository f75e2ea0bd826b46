"""Reading both sides of a mirror for a comparison: each partition's ends on both clusters and
its offset translation (`read_ends`), then a window of each partition's records from the
source and from the mirror, in one read of each side for all of them, matched by
`record_matching.compare` (`compare_windows`). The background sweep and the verifications asked
for both read through here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaException

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError
from replication.kafka import translations
from replication.kafka.connections import (
    destination_admin,
    records,
    source_admin,
    source_records,
)
from replication.models import MirrorTopic
from replication.observe.record_matching import Compared, Position, compare
from spark_jobs.translation import Runs

SLACK = 8  # mirror records read past a window, to tell a record too many from one missing


@dataclass(frozen=True)
class Ends:
    """A partition as both clusters have it now; `runs` its offset translation."""

    source_start: int
    source_end: int
    mirror_start: int
    mirror_end: int
    runs: Runs

    @property
    def copied(self) -> int:
        """The source offset up to which the mirror has copied (no further than the source's
        end: what lies beyond in the mirror is not the source's)."""
        return min(self.runs.next_source(self.mirror_end), self.source_end)

    def first(self) -> Position:
        """The first place both sides still hold."""
        source = max(self.source_start, _to_source(self.runs, self.mirror_start))
        return Position(source, max(self.runs.to_destination(source), self.mirror_start))


def _to_source(runs: Runs, mirror_offset: int) -> int:
    entry = next((e for e in reversed(runs.entries) if e.destination <= mirror_offset), None)
    return mirror_offset if entry is None else entry.source + (mirror_offset - entry.destination)


def read_ends(mirror: MirrorTopic) -> dict[int, Ends]:
    """Each partition's ends on both sides. The mirror's are read first: a record beyond the
    source's end read after them cannot have been copied from it."""
    dest = destination_admin(mirror.link)
    partitions = dest.describe_topic(mirror.mirror_topic).partitions
    tps = [(mirror.mirror_topic, p) for p in range(partitions)]
    mirror_end, mirror_start = dest.offsets(tps), dest.offsets(tps, "earliest")
    runs = translations.of_topic(mirror.destination, mirror.mirror_topic)
    source = source_admin(mirror.link)
    source_tps = [(mirror.source_topic, p) for p in range(partitions)]
    source_end, source_start = source.offsets(source_tps), source.offsets(source_tps, "earliest")
    return {
        p: Ends(
            source_start[mirror.source_topic, p],
            source_end[mirror.source_topic, p],
            mirror_start[mirror.mirror_topic, p],
            mirror_end[mirror.mirror_topic, p],
            runs.get(p, Runs()).upto(mirror_end[mirror.mirror_topic, p]),
        )
        for p in range(partitions)
    }


_compacted: dict[int, tuple[bool, float]] = {}


def _is_compacted(mirror: MirrorTopic, admin: KafkaAdmin) -> bool:
    """cleanup.policy includes compact (read again every 5 minutes)."""
    known = _compacted.get(mirror.pk)
    if known is None or time.monotonic() - known[1] > 300:
        policy = admin.topic_configs(mirror.mirror_topic)["cleanup.policy"].value or ""
        known = _compacted[mirror.pk] = ("compact" in policy, time.monotonic())
    return known[0]


def compare_windows(
    mirror: MirrorTopic,
    windows: dict[int, tuple[Position, int]],
    ends: dict[int, Ends],
    final: frozenset[int] = frozenset(),
) -> dict[int, Compared]:
    """Compare each partition's window (from a position to a source offset): one read of each
    side for all of them. `final`: the partitions nothing is read of after this window."""
    source_ranges = {
        (mirror.source_topic, p): (at.source, upto) for p, (at, upto) in windows.items()
    }
    mirror_ranges = {
        (mirror.mirror_topic, p): (
            at.mirror,
            min(ends[p].mirror_end, ends[p].runs.to_destination(upto) + SLACK),
        )
        for p, (at, upto) in windows.items()
    }
    try:
        source = source_records(mirror.link).read_ranges(source_ranges)
        # every record the mirror holds, whoever wrote it
        held = records(mirror.destination).read_ranges(mirror_ranges, committed=False)
    except KafkaException as exc:
        raise ReplicationError(f"Could not read the records to compare: {exc.args[0]}") from exc
    except KafkaAdminError as exc:  # a cluster of another network zone, whose keeper did not answer
        raise ReplicationError(f"Could not read the records to compare: {exc}") from exc
    compacted = _is_compacted(mirror, destination_admin(mirror.link))
    outcome = {}
    for p, (at, upto) in windows.items():
        mirror_upto = mirror_ranges[mirror.mirror_topic, p][1]
        outcome[p] = compare(
            p,
            source[mirror.source_topic, p],
            held[mirror.mirror_topic, p],
            ends[p].runs.to_destination,
            at,
            Position(upto, mirror_upto),
            source_complete=upto >= ends[p].source_end,
            mirror_complete=mirror_upto >= ends[p].mirror_end,
            final=p in final,
            compacted=compacted,
        )
    return outcome
