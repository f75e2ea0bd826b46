"""The verifications asked for: `kafka-mirrors --verify`, the API and the mirror page ask for a
whole range of a mirror at once (`start`, `start_all`), a worker compares it chunk by chunk
(`run`, the `tasks.verify_mirror` task) with its progress stored as it goes, and `outcome` says
how it stands. At most one verification of a mirror runs at a time; one whose worker stopped
ends FAILED (`settle_abandoned`).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import current_app
from django.db import transaction
from django.utils import timezone

from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError, conflict, not_found
from replication.governance import audit
from replication.models import MirrorTopic, Verification
from replication.observe.mirror_differences import KEPT, note_differences, order
from replication.observe.record_matching import Compared, Difference, Position, fold
from replication.observe.verification_reads import Ends, compare_windows, read_ends
from replication.states.mirror_states import FOLLOWING

log = logging.getLogger(__name__)

CHUNK_RECORDS = 5_000  # per partition and read, for a verification asked for
ABANDONED_S = 60  # a running verification whose worker has not been heard of for this long
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
    found.differences = [d.as_json() for d in fold(sorted([*kept, *new], key=order))[:KEPT]]
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
