"""What comparisons found differing, kept on the mirror (`MirrorTopic.differences`), like
records retention took before they were copied (`mirrors.note_records_lost`): the mirror is no
longer an exact copy, whatever happens next. Each record is counted once, however many
comparisons (the sweep, a verification asked for) come upon it; the first time is said in the
log and the audit trail. Also what a page says of them (`trouble`, `differences`).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from django.db import transaction

from replication.governance import audit
from replication.models import MirrorTopic, Verification
from replication.observe.record_matching import Difference, fold

log = logging.getLogger(__name__)

KEPT = 50  # differences kept, folded; the count of differing records goes on


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
        merged = [d.as_json() for d in fold(sorted([*kept, *new], key=order))[:KEPT]]
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


def order(d: Difference) -> tuple:
    """The order differences are kept in: by partition, then offset."""
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
