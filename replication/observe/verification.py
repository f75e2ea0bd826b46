"""Whether a mirror is identical to its source, record by record: each source record at its
partition and offset (through the offset translation) with the same key, value, headers and
timestamp, and nothing else in the mirror.

In the background (`sweep_all`, the beat's every `ROUND_S`), every following mirror is compared
a window at a time: each round compares up to `ROUND_RECORDS` more records per partition from
where the last stopped, so over time every record is checked once, at the cost of reading it
once more on each side, and the mirror's page says up to which offset each partition is known
identical. `kafka-mirrors --verify`, the API and the mirror page ask for a whole range at once
(`start`, then `run` in a worker, with its progress stored as it goes).

What differs is kept on the mirror (`MirrorTopic.differences`), like records retention took
before they were copied (`mirrors.note_records_lost`): the mirror is no longer an exact copy,
whatever happens next. A record is matched with the mirror's in order, so one record too many
in the mirror (a super user writes past the read-only rule) reads as one extra record and the
source's records after it as moved one offset on, not as every record after it differing.
Records of a compacted topic are compared where both sides still hold them (compaction runs on
each side at its own time), so there only records that differ are found."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import timedelta

from celery import current_app
from confluent_kafka import KafkaException
from django.db import transaction
from django.utils import timezone

from infra.kafka_admin import KafkaAdmin, KafkaAdminError
from infra.kafka_copy import Record, read_ranges
from replication.core.errors import ReplicationError, conflict, not_found
from replication.governance import audit
from replication.kafka import translations
from replication.kafka.connections import destination_admin, source_admin
from replication.models import DifferenceJson, MirrorTopic, Verification, VerifiedPartition
from replication.states.mirror_states import FOLLOWING
from spark_jobs.translation import Runs

log = logging.getLogger(__name__)
State = MirrorTopic.State

ROUND_S = 30  # the beat's interval (console/settings.py)
ROUND_RECORDS = 2_000  # per partition and round
CHUNK_RECORDS = 5_000  # per partition and read, for a verification asked for
SLACK = 8  # mirror records read past a window, to tell a record too many from one missing
KEPT = 50  # differences kept, folded; the count of differing records goes on
ABANDONED_S = 60  # a running verification whose worker has not been heard of for this long


# --- comparing ----------------------------------------------------------------------------


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


# --- reading both sides --------------------------------------------------------------------


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
        source = read_ranges(mirror.link.source_client_config(), source_ranges)
        # every record the mirror holds, whoever wrote it
        held = read_ranges(mirror.destination.connection_config(), mirror_ranges, committed=False)
    except KafkaException as exc:
        raise ReplicationError(f"Could not read the records to compare: {exc.args[0]}") from exc
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


# --- what was found, kept on the mirror ------------------------------------------------------


def _span(d: Difference) -> tuple[int, int]:
    """The offsets a difference covers: the mirror's, or the source's for a record missing."""
    first = d.source_offset if d.kind == "MISSING" else d.mirror_offset
    assert first is not None  # a record missing has a source offset, any other a mirror's
    return first, first + d.count


def _part(d: Difference, first: int, end: int) -> Difference:
    """The records of `d` within [first, end) of its offsets."""
    skip = first - _span(d)[0]

    def moved(offset: int | None) -> int | None:
        return None if offset is None else offset + skip

    return replace(
        d,
        source_offset=moved(d.source_offset),
        mirror_offset=moved(d.mirror_offset),
        count=end - first,
    )


def unseen(kept: list[Difference], found: list[Difference]) -> list[Difference]:
    """What of `found` is not in `kept` already (the sweep and a verification asked for may
    both come upon the same records)."""
    new = []
    for d in found:
        pieces = [_span(d)]
        for k in kept:
            if (k.partition, k.kind) != (d.partition, d.kind):
                continue
            a, b = _span(k)
            pieces = [
                piece
                for x, y in pieces
                for piece in ((x, min(y, a)), (max(x, b), y))
                if piece[0] < piece[1]
            ]
        new += [_part(d, x, y) for x, y in pieces]
    return new


def note_differences(mirror: MirrorTopic, found: list[Difference]) -> None:
    """Keep what differs on the mirror (folded with what was found before, each record
    counted once), and say so once in the log and the audit trail."""
    if not found:
        return
    with transaction.atomic():
        row = MirrorTopic.objects.select_for_update().get(pk=mirror.pk)
        kept = [Difference.of_json(d) for d in row.differences or []]
        new = unseen(kept, found)
        if not new:
            return
        merged = [d.as_json() for d in fold(sorted([*kept, *new], key=_order))[:KEPT]]
        count = row.differing_records + sum(d.count for d in new)
        MirrorTopic.objects.filter(pk=mirror.pk).update(differences=merged, differing_records=count)
    first_time = not row.differing_records
    mirror.differences, mirror.differing_records = merged, count
    said = "; ".join(d.words() for d in new[:5])
    log.error("Mirror topic %s differs from its source: %s", mirror.mirror_topic, said)
    if first_time:
        audit.record(
            audit.Actor.system("verification"),
            "mirror.differs",
            f"mirror {mirror.mirror_topic}",
            result=audit.AuditEvent.Result.FAILED,
            after={"differing_records": count},
            message=said,
        )


def _order(d: Difference) -> tuple:
    return (d.partition, d.mirror_offset if d.mirror_offset is not None else d.source_offset)


def trouble(mirror: MirrorTopic) -> str:
    """What to say of a mirror found differing from its source ("" if it was not)."""
    if not mirror.differing_records:
        return ""
    n = mirror.differing_records
    first = Difference.of_json(mirror.differences[0]).words() if mirror.differences else ""
    return (
        f"{n} record{'s' * (n != 1)} differ{'s' * (n == 1)} from the source (first: {first}). "
        "The mirror is not an exact copy of its source: find who wrote to it, and re-create "
        "the mirror if it must be one."
    )


def differences(found: MirrorTopic | Verification) -> list[str]:
    """What a mirror (or one verification of it) found differing from the source, in words
    ([] for an identical one)."""
    return [Difference.of_json(d).words() for d in found.differences or []]


# --- in the background ---------------------------------------------------------------------


def sweep_all(budget_s: float = ROUND_S * 0.6, renew: Callable[[], None] = lambda: None) -> None:
    """One round: each following mirror compared a window further, those least recently
    compared first, for at most `budget_s` seconds (what is left waits for the next round)."""
    mirrors = list(
        MirrorTopic.objects.filter(state__in=FOLLOWING).select_related(
            "link", "link__destination", "destination"
        )
    )
    mirrors.sort(key=lambda m: (m.verification or {}).get("at", 0))
    deadline = time.monotonic() + budget_s
    for mirror in mirrors:
        if time.monotonic() > deadline:
            break
        renew()
        try:
            sweep(mirror)
        except (ReplicationError, KafkaAdminError) as exc:
            log.info("Could not verify mirror topic %s this round: %s", mirror, exc)


def sweep(mirror: MirrorTopic) -> None:
    """Compare the next window of each of the mirror's partitions, and keep where it got."""
    ends = read_ends(mirror)
    kept = (mirror.verification or {}).get("partitions", {})
    state: dict[str, VerifiedPartition] = {}
    windows = {}
    for p, e in ends.items():
        first = e.first()
        was = kept.get(str(p))
        at = Position(was["source"], was["mirror"]) if was else first
        since = was["from"] if was else first.source
        if at.source < first.source or at.mirror < first.mirror:  # retention took the rest
            at, since = first, first.source
        state[str(p)] = {"from": since, "source": at.source, "mirror": at.mirror}
        upto = min(e.copied, at.source + ROUND_RECORDS)
        if upto > at.source or e.mirror_end > at.mirror:
            windows[p] = (at, max(upto, at.source))
    found: list[Difference] = []
    outcome = compare_windows(mirror, windows, ends) if windows else {}
    for p, done in outcome.items():
        state[str(p)]["source"], state[str(p)]["mirror"] = done.upto.source, done.upto.mirror
        found += done.differences
    mirror.verification = {"at": time.time(), "partitions": state}
    MirrorTopic.objects.filter(pk=mirror.pk).update(verification=mirror.verification)
    note_differences(mirror, found)


def verified(mirror: MirrorTopic) -> dict[int, tuple[int, int]]:
    """Per partition, the source offsets [from, to) the background comparison has checked."""
    partitions = (mirror.verification or {}).get("partitions", {})
    return {int(p): (v["from"], v["source"]) for p, v in partitions.items()}


def summary(mirror: MirrorTopic) -> str:
    """The background verification in a sentence ("" before its first round)."""
    checked = verified(mirror)
    if not checked:
        return ""
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(mirror.verification["at"]))
    upto = min(to for _, to in checked.values())
    where = (
        f"up to offset {upto}"
        if len(checked) == 1
        else f"up to offset {upto} in every partition (each partition's in the table)"
    )
    if mirror.differing_records:
        n = mirror.differing_records
        return (
            f"Differs from its source: {n} record{'s' * (n != 1)}; the rest compared identical "
            f"{where}, checked at {at} UTC."
        )
    return (
        f"Identical to its source {where}: every record before it compared by partition, "
        f"offset, key, value, headers and timestamp, checked at {at} UTC."
    )


# --- on demand -------------------------------------------------------------------------------


MAX_OFFSET = 2**63 - 1  # Kafka's offsets, and the database's columns, are signed 64-bit


def start(
    actor: audit.Actor,
    mirror: MirrorTopic,
    from_offset: int | None = None,
    to_offset: int | None = None,
) -> Verification:
    """Ask for every record of the mirror from source offset `from_offset` (default: the
    source's log start) to before `to_offset` (default: what the mirror has copied when it
    runs) to be compared; a worker runs it (`tasks.verify_mirror`). Refused while another
    verification of the mirror runs or waits for a worker."""
    return start_all(actor, [mirror], from_offset, to_offset)[0]


def start_all(
    actor: audit.Actor,
    mirrors: list[MirrorTopic],
    from_offset: int | None = None,
    to_offset: int | None = None,
) -> list[Verification]:
    """`start` for each of `mirrors` (one range for all), all or none: each is checked with
    its row locked, and if one is refused none is started. At most one verification of a
    mirror runs at a time: two asked for at once are settled by the lock, and the later one is
    refused (409) naming the one that runs."""
    if not mirrors:
        raise ReplicationError("Name at least one mirror topic to verify.")
    first = f"mirror {mirrors[0].mirror_topic}"
    with audit.refusals(actor, "mirror.verify", first):
        _check_range(from_offset, to_offset)
    with transaction.atomic():
        # In one order, so that two requests over the same mirrors never deadlock; on SQLite
        # the transaction's write lock (IMMEDIATE) serialises them instead.
        locked = {
            m.pk: m
            for m in MirrorTopic.objects.select_for_update()
            .filter(pk__in=[m.pk for m in mirrors])
            .order_by("pk")
        }
        running = {
            v.mirror_id: v
            for v in Verification.objects.filter(
                mirror__in=list(locked), state=Verification.State.RUNNING
            ).order_by("started_at", "pk")
        }
        refused = next(
            (
                (mirror, problem)
                for mirror in mirrors
                if (problem := _refusal(mirror, locked.get(mirror.pk), running.get(mirror.pk)))
            ),
            None,
        )
        started = [] if refused else [_started(actor, m, from_offset, to_offset) for m in mirrors]
        transaction.on_commit(lambda: _hand_over(started))
    if refused:
        mirror, problem = refused
        then = (
            f"None of the {len(mirrors)} mirror topics asked for was started: leave this one "
            "out, or ask again once it can be verified."
            if len(mirrors) > 1
            else "Nothing was started."
        )
        with audit.refusals(actor, "mirror.verify", f"mirror {mirror.mirror_topic}"):
            raise ReplicationError(f"{problem} {then}", problem.status)
    return started


def _started(
    actor: audit.Actor, mirror: MirrorTopic, from_offset: int | None, to_offset: int | None
) -> Verification:
    found = Verification.objects.create(
        mirror=mirror, requested_by=actor.name, from_offset=from_offset, to_offset=to_offset
    )
    audit.record(
        actor,
        "mirror.verify",
        f"mirror {mirror.mirror_topic}",
        after={"verification": found.pk, "from": from_offset, "to": to_offset},
        in_change=True,
    )
    return found


def _check_range(from_offset: int | None, to_offset: int | None) -> None:
    for name, value in (("start", from_offset), ("end", to_offset)):
        if value is not None and not 0 <= value <= MAX_OFFSET:
            # A number beyond the 64-bit columns would fail in the database, not here.
            shown = str(value) if abs(value) <= 10**30 else ("-" * (value < 0)) + "over 10^30"
            raise ReplicationError(
                f"The range's {name} must be an offset from 0 to {MAX_OFFSET} (2^63 - 1, "
                f"Kafka's largest); it was {shown}. Nothing was started."
            )
    if from_offset is not None and to_offset is not None and to_offset <= from_offset:
        raise ReplicationError(
            f"The range's end ({to_offset}) must be after its start ({from_offset}): it "
            "runs from its start up to, not including, its end."
        )


def _refusal(
    mirror: MirrorTopic, now: MirrorTopic | None, running: Verification | None
) -> ReplicationError | None:
    """Why `mirror` (as it is `now`, locked) cannot be verified; None if it can."""
    if now is None:
        return not_found(f"Mirror topic {mirror.mirror_topic} was deleted.")
    if now.state not in FOLLOWING:
        return conflict(
            f"Mirror topic {now.mirror_topic} is {now.state}: only a mirror that "
            "follows its source can be compared with it."
        )
    if running is not None:
        asked = running.started_at.strftime("%Y-%m-%d %H:%M:%S")
        done = (
            f"has compared {running.checked} of {running.total} source offsets"
            if running.total
            else "waits for a worker to start it"
        )
        return conflict(
            f"Mirror topic {now.mirror_topic} is being verified already: verification "
            f"{running.pk}, asked for by {running.requested_by} at {asked} UTC, {done}. Only "
            "one verification of a mirror runs at a time: wait for it to finish (its page, or "
            f"GET .../mirrors/{now.mirror_topic}/verifications/{running.pk}, shows how far it "
            "got; one whose worker stopped ends by itself within two minutes), then ask again."
        )
    return None


def _hand_over(started: list[Verification]) -> None:
    for found in started:
        current_app.send_task("replication.tasks.verify_mirror", [found.pk])


def get(mirror: MirrorTopic, pk: str | int) -> Verification:
    try:
        return mirror.verifications.get(pk=int(pk))
    except (ValueError, Verification.DoesNotExist):
        raise not_found(f"Mirror topic {mirror.mirror_topic} has no verification {pk}.") from None


def run(pk: int) -> None:
    """Compare the verification's whole range, chunk by chunk, storing its progress."""
    found = Verification.objects.select_related("mirror__link", "mirror__destination").get(pk=pk)
    if found.state != Verification.State.RUNNING:
        return
    mirror = found.mirror
    try:
        ends = read_ends(mirror)
        positions = _plan(found, ends)
        while positions:
            windows = {
                p: (at, min(end, at.source + CHUNK_RECORDS)) for p, (at, end) in positions.items()
            }
            last = frozenset(p for p, (_, upto) in windows.items() if upto >= positions[p][1])
            outcome = compare_windows(mirror, windows, ends, final=last)
            _progress(found, outcome)
            for p, done in outcome.items():
                at, end = positions[p]
                positions[p] = (done.upto, end)
                if done.upto.source >= end or done.upto == at:  # done, or no further to go
                    positions.pop(p)
    except (ReplicationError, KafkaAdminError) as exc:
        _finish(found, Verification.State.FAILED, error=str(exc))
        return
    state = (
        Verification.State.DIFFERENT if found.differing_records else Verification.State.IDENTICAL
    )
    _finish(found, state)


def _plan(found: Verification, ends: dict[int, Ends]) -> dict[int, tuple[Position, int]]:
    """Each partition's range: where it starts on both sides, and the source offset it ends at;
    what cannot be compared goes in the notes."""
    positions, notes, ranges = {}, [], {}
    for p, e in ends.items():
        first = e.first()
        start = first.source if found.from_offset is None else max(found.from_offset, 0)
        end = e.copied if found.to_offset is None else found.to_offset
        if start < first.source:
            notes.append(
                f"partition {p}: offsets {start} to {min(end, first.source) - 1} not compared: "
                "the source no longer has them (retention)"
            )
            start = first.source
        if end > e.copied:
            notes.append(
                f"partition {p}: offsets {max(start, e.copied)} to {end - 1} not compared: "
                "the mirror has not copied them yet"
            )
            end = e.copied
        if end <= start:
            continue
        at = Position(start, e.runs.to_destination(start))
        positions[p] = (at, end)
        ranges[str(p)] = {"first": start, "end": end, "at": start}
    found.ranges, found.notes = ranges, notes
    found.total = sum(r["end"] - r["first"] for r in ranges.values())
    found.save(update_fields=["ranges", "notes", "total"])
    return positions


def _progress(found: Verification, outcome: dict[int, Compared]) -> None:
    new: list[Difference] = []
    for p, done in outcome.items():
        found.ranges[str(p)]["at"] = done.upto.source
        found.identical += done.identical
        new += done.differences
    found.checked = sum(r["at"] - r["first"] for r in found.ranges.values())
    kept = [Difference.of_json(d) for d in found.differences]
    found.differences = [d.as_json() for d in fold(sorted([*kept, *new], key=_order))[:KEPT]]
    found.differing_records += sum(d.count for d in new)
    found.beat_at = timezone.now()
    found.save(
        update_fields=[
            "ranges",
            "identical",
            "checked",
            "differences",
            "differing_records",
            "beat_at",
        ]
    )
    note_differences(found.mirror, new)


def _finish(found: Verification, state: str, error: str = "") -> None:
    found.state, found.error, found.finished_at = state, error, timezone.now()
    found.save(update_fields=["state", "error", "finished_at"])
    log.info("Verification %s of mirror topic %s: %s", found.pk, found.mirror, outcome(found))


def settle_abandoned() -> None:
    """A verification whose worker stopped (killed, restarted) ends FAILED, saying so."""
    stale = timezone.now() - timedelta(seconds=ABANDONED_S)
    Verification.objects.filter(state=Verification.State.RUNNING, beat_at__lt=stale).update(
        state=Verification.State.FAILED,
        error="The worker running it stopped before it finished. Verify again.",
        finished_at=timezone.now(),
    )


def outcome(found: Verification) -> str:
    """The verification in a sentence."""
    done = f"{found.checked} of {found.total} source offsets"
    if found.state == Verification.State.RUNNING:
        share = f" ({100 * found.checked // found.total}%)" if found.total else ""
        return f"Running: {done} compared{share}."
    if found.state == Verification.State.FAILED:
        return f"Failed after {done}: {found.error}"
    ranges = ", ".join(
        f"partition {p} offsets {r['first']} to {r['end'] - 1}"
        for p, r in sorted(found.ranges.items(), key=lambda i: int(i[0]))
    )
    if found.state == Verification.State.DIFFERENT:
        return (
            f"Differs from its source: {found.differing_records} record"
            f"{'s' * (found.differing_records != 1)} of {ranges or 'nothing'}."
        )
    if not found.total:
        return "Nothing to compare: " + ("; ".join(found.notes) or "the mirror is empty") + "."
    return f"Identical to its source: {found.identical} records in {ranges}."
