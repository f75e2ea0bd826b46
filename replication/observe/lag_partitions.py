"""One partition of a mirror as a lag reading finds it: both clusters' ends, the stream's last
report of it (its offset run, how far it has read, a schema it waits for), and what they say
together: the lag in records, the oldest record not yet mirrored, records the source deleted
before they were copied. `lag.describe_mirrors` reads the clusters and makes these."""

from __future__ import annotations

from dataclasses import dataclass

from replication.models import MirrorTopic
from spark_jobs.control import MirrorPartitionProgress, SchemaWait


@dataclass(frozen=True)
class PartitionStatus:
    partition: int
    state: str
    dest_log_end_offset: int
    source_high_watermark: int
    # From the link's stream: the source high watermark at its last fetch, how long ago that
    # was, and the partition's current offset run (source offset S went to destination D).
    last_fetch_source_high_watermark: int = -1
    time_since_last_fetch_ms: int = -1
    run: tuple[int, int] = (0, 0)
    translated: bool = False
    read_upto: int = -1  # source offsets the stream has read past (gaps included)
    next_source: int = -1  # the source offset the stream reads next
    source_log_start: int = -1
    # No report of the stream, but its last one said the offsets are the source's.
    known_identical: bool = False
    schema_wait: str = ""  # why it holds at a record until its schema reaches the destination
    # The lag in time (lag_times): the timestamp of the oldest source record the mirror does not
    # hold yet, and its age when read (-1: unknown; 0 caught up).
    oldest_timestamp: int = -1
    lag_ms: int = -1

    @property
    def offset_mode(self) -> str:
        """IDENTICAL while destination offsets equal source offsets, else TRANSLATED."""
        return "TRANSLATED" if self.translated else "IDENTICAL"

    @property
    def lag(self) -> int:
        """Source records not yet in the mirror: the source's end less the source offset the
        mirror's end stands for (through the offset run), so records that compaction or
        transactions removed from the source count until the mirror is past them. How far the
        stream read past such gaps counts only once all it had read is in the mirror: before
        that, what it read is in flight, not copied."""
        if self.source_high_watermark < 0 or self.dest_log_end_offset < 0:
            return -1
        copied = self._copied
        if self.next_source >= 0 and copied >= self.next_source:
            copied = max(copied, self.read_upto)
        return max(0, self.source_high_watermark - copied)

    @property
    def first_missing(self) -> int:
        """The source offset of the oldest record the mirror does not hold yet (-1: it holds
        them all, or the lag is unknown)."""
        return self.source_high_watermark - self.lag if self.lag > 0 else -1

    @property
    def _copied(self) -> int:
        """The source offset the mirror's end stands for, through the offset run."""
        return self.run[0] + (self.dest_log_end_offset - self.run[1])

    @property
    def lost(self) -> tuple[int, int] | None:
        """Source offsets [first, end) the source deleted (retention outran replication) before
        the stream copied or even read them; None when none were, or when it cannot be told
        (offsets translated, and no report of the stream to map them by)."""
        if self.source_log_start < 0 or self.dest_log_end_offset < 0:
            return None
        if self.next_source < 0 and not self.known_identical:
            return None
        reached = max(self._copied, self.read_upto)  # read, but not yet written, is in flight
        return (reached, self.source_log_start) if self.source_log_start > reached else None


def partition_status(
    mirror: MirrorTopic,
    partition: int,
    dest_end: int,
    source: int | tuple[int, int],
    reported: MirrorPartitionProgress | None,
    since_fetch_ms: int,
    known_identical: bool,
    kept_fetch: int = -1,
) -> PartitionStatus:
    """Partition `partition` of `mirror`: its end on the destination, its source's end (with
    the log start, `(end, start)`, when the beat's sample read it) and the stream's report;
    `kept_fetch`, the last fetch's source high watermark its latest reading kept (-1: none)."""
    source_hw, log_start = source if isinstance(source, tuple) else (source, -1)
    common = (partition, mirror.state, dest_end, source_hw)
    if reported is None:  # the stream has not reported this partition (yet, or any more)
        return PartitionStatus(
            *common,
            source_log_start=log_start,
            known_identical=known_identical,
            last_fetch_source_high_watermark=kept_fetch,
        )
    # A stream just started (a resume, the engine's restart) reports -1 until its first fetch:
    # the last fetch known, kept with the mirror's latest reading over the pause, still holds.
    fetched = reported["source_hw"] if reported["source_hw"] >= 0 else kept_fetch
    return PartitionStatus(
        *common,
        source_log_start=log_start,
        last_fetch_source_high_watermark=fetched,
        time_since_last_fetch_ms=since_fetch_ms if reported["source_hw"] >= 0 else -1,
        run=(reported["run"][0], reported["run"][1]),
        translated=reported["translated"],
        read_upto=reported["read_upto"],
        next_source=reported.get("next_source", -1),
        schema_wait=_schema_wait(partition, reported.get("schema_wait")),
    )


def _schema_wait(partition: int, wait: SchemaWait | None) -> str:
    """A held partition (see spark_jobs.schema_gate) in words."""
    if not wait:
        return ""
    ids = wait["ids"]
    named = ", ".join(ids)
    return (
        f"Partition {partition} holds at source offset {wait['offset']} until the destination's "
        f"schema registry has schema id{'s' if len(ids) > 1 else ''} {named} "
        f"({'; '.join(dict.fromkeys(ids.values()))}). The schema sync brings "
        f"{'them' if len(ids) > 1 else 'it'} within seconds; a conflict waits until it is "
        "resolved on the destination's registry."
    )
