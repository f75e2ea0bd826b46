"""Matching a window of a mirror partition's records with its source's, record by record: each
source record at its partition and offset (through the offset translation) with the same key,
value, headers and timestamp, and nothing else in the mirror. Pure: the records come read
(`verification_reads`), and what differs comes back as `Difference`s.

A record is matched with the mirror's in order, so one record too many in the mirror (a super
user writes past the read-only rule) reads as one extra record and the source's records after
it as moved one offset on, not as every record after it differing. Records of a compacted topic
are compared where both sides still hold them (compaction runs on each side at its own time), so
there only records that differ are found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from infra.kafka_copy import Record
from replication.models import DifferenceJson


@dataclass(frozen=True)
class Difference:
    """Records that differ, `count` in a row of one kind: EXTRA (in the mirror, not from the
    source), MISSING (a source record the mirror does not have), DIFFERS (the record at the
    same place differs in `fields`), MOVED (the source's record, at another offset than its
    translation says)."""

    partition: int
    kind: str
    source_offset: int | None
    mirror_offset: int | None
    fields: tuple[str, ...] = ()
    count: int = 1

    def words(self) -> str:
        n, p = self.count, f"partition {self.partition}"

        def span(first: int | None) -> str:
            assert first is not None  # each kind says the offsets it has
            return f"offset {first}" if n == 1 else f"offsets {first} to {first + n - 1}"

        if self.kind == "EXTRA":
            return (
                f"{p}: the mirror holds {n} record{'s' * (n > 1)} its source does not have, at "
                f"mirror {span(self.mirror_offset)} (written into the mirror past its "
                "read-only rule, by a super user?)"
            )
        if self.kind == "MISSING":
            return f"{p}: source {span(self.source_offset)} missing from the mirror"
        if self.kind == "MOVED":
            return (
                f"{p}: source {span(self.source_offset)} at mirror {span(self.mirror_offset)}, "
                f"not at the offset{'s' * (n > 1)} translation gives: consumers' offsets "
                "translate to the wrong records there"
            )
        return (
            f"{p}: source {span(self.source_offset)} differ{'s' * (n == 1)} from mirror "
            f"{span(self.mirror_offset)} in {', '.join(self.fields)}"
        )

    def as_json(self) -> DifferenceJson:
        return [
            self.partition,
            self.kind,
            self.source_offset,
            self.mirror_offset,
            list(self.fields),
            self.count,
        ]

    @classmethod
    def of_json(cls, value: DifferenceJson) -> Difference:
        partition, kind, source, mirror, fields, count = value
        return cls(partition, kind, source, mirror, tuple(fields), count)


def _follows(last: Difference, d: Difference) -> bool:
    """`d` goes on where `last` ends: the same kind, the next offsets on both sides."""

    def next_of(offset: int | None, then: int | None) -> bool:
        return (
            offset is None and then is None or (offset is not None and then == offset + last.count)
        )

    return (
        (last.partition, last.kind, last.fields) == (d.partition, d.kind, d.fields)
        and next_of(last.source_offset, d.source_offset)
        and next_of(last.mirror_offset, d.mirror_offset)
    )


def fold(differences: Iterable[Difference]) -> list[Difference]:
    """Runs of differences that go on from each other, as one each."""
    folded: list[Difference] = []
    for d in differences:
        if folded and _follows(folded[-1], d):
            folded[-1] = replace(folded[-1], count=folded[-1].count + d.count)
        else:
            folded.append(d)
    return folded


def _fields_differing(s: Record, m: Record) -> tuple[str, ...]:
    differing = []
    if s.key != m.key:
        differing.append("key")
    if s.value != m.value:
        differing.append("value")
    if s.headers != m.headers:
        differing.append("headers")
    # A topic with message.timestamp.type=LogAppendTime stamps records as its broker appends
    # them: the mirror's are its own, by design.
    if s.timestamp != m.timestamp and not m.log_append_time:
        differing.append("timestamp")
    return tuple(differing)


@dataclass(frozen=True)
class Position:
    """Where a comparison of a partition goes on: this source offset, this mirror offset."""

    source: int
    mirror: int


@dataclass(frozen=True)
class Compared:
    identical: int
    differences: list[Difference]
    upto: Position  # every record before it has its verdict


def compare(
    partition: int,
    source: list[Record],
    mirror: list[Record],
    to_destination: Callable[[int], int],
    start: Position,
    end: Position,
    *,
    source_complete: bool,
    mirror_complete: bool,
    final: bool = False,
    compacted: bool = False,
) -> Compared:
    """Match a window of a partition's source records with the mirror's, in order.

    `source`: the committed source records from `start.source` to `end.source`; `mirror`: the
    mirror's records from `start.mirror` to `end.mirror` (`SLACK` more than the window needs,
    or to the mirror's end). `*_complete`: that side was read to its very end, so nothing more
    can come; otherwise a record that might still match beyond what was read gets no verdict
    yet, and `upto` stops before it, unless this is the `final` window of a range."""
    if compacted:
        return _compare_by_offset(partition, source, mirror, to_destination, end)
    found: list[Difference] = []
    identical = i = j = 0
    while i < len(source):
        s = source[i]
        if j >= len(mirror):
            if not (mirror_complete or final):
                at = mirror[-1].offset + 1 if mirror else start.mirror
                return Compared(identical, fold(found), Position(s.offset, at))
            found += [Difference(partition, "MISSING", r.offset, None) for r in source[i:]]
            break
        m = mirror[j]
        if not _fields_differing(s, m):
            if m.offset == to_destination(s.offset):
                identical += 1
            else:
                found.append(Difference(partition, "MOVED", s.offset, m.offset))
            i, j = i + 1, j + 1
            continue
        m_next = mirror[j + 1] if j + 1 < len(mirror) else None
        s_next = source[i + 1] if i + 1 < len(source) else None
        undecided = (m_next is None and not mirror_complete) or (
            s_next is None and not source_complete
        )
        if undecided and not final:
            return Compared(identical, fold(found), Position(s.offset, m.offset))
        difference, di, dj = _mismatch(partition, s, m, s_next, m_next)
        found.append(difference)
        i, j = i + di, j + dj
    rest = mirror[j:]
    if source_complete:  # the mirror holds more than its source ever had
        found += [Difference(partition, "EXTRA", None, r.offset) for r in rest]
        rest = []
    at = rest[0].offset if rest else (mirror[-1].offset + 1 if mirror else start.mirror)
    return Compared(identical, fold(found), Position(end.source, at))


def _mismatch(
    partition: int, s: Record, m: Record, s_next: Record | None, m_next: Record | None
) -> tuple[Difference, int, int]:
    """What a source record `s` and the mirror's `m` that differ are, by the records after
    each: and how many to move on, on each side."""
    if m_next is not None and not _fields_differing(s, m_next):
        return Difference(partition, "EXTRA", None, m.offset), 0, 1
    if s_next is not None and not _fields_differing(s_next, m):
        return Difference(partition, "MISSING", s.offset, None), 1, 0
    return Difference(partition, "DIFFERS", s.offset, m.offset, _fields_differing(s, m)), 1, 1


def _compare_by_offset(
    partition: int,
    source: list[Record],
    mirror: list[Record],
    to_destination: Callable[[int], int],
    end: Position,
) -> Compared:
    """A compacted topic: records held on both sides at matching offsets must be equal."""
    at = {r.offset: r for r in mirror}
    found, identical = [], 0
    for s in source:
        m = at.get(to_destination(s.offset))
        if m is None:
            continue
        if differing := _fields_differing(s, m):
            found.append(Difference(partition, "DIFFERS", s.offset, m.offset, differing))
        else:
            identical += 1
    return Compared(identical, fold(found), Position(end.source, to_destination(end.source)))
