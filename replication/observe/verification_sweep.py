"""The background verification: in the beat's every `ROUND_S` (`sweep_all`), every following
mirror is compared a window at a time. Each round compares up to `ROUND_RECORDS` more records
per partition from where the last stopped, so over time every record is checked once, at the
cost of reading it once more on each side, and the mirror's page says up to which offset each
partition is known identical (`verified`, `summary`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError
from replication.models import MirrorTopic, VerifiedPartition
from replication.observe.mirror_differences import note_differences
from replication.observe.record_matching import Difference, Position
from replication.observe.verification_reads import compare_windows, read_ends
from replication.states.mirror_states import FOLLOWING

log = logging.getLogger(__name__)

ROUND_S = 30  # the beat's interval (console/settings.py)
ROUND_RECORDS = 2_000  # per partition and round


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
