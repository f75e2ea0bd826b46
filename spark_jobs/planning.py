"""A link's decisions in the engine, as pure functions of what it knows: which partitions the
slots should hold and where, which mirror-set generation they have all taken up, how far the
mirror topics must grow, and what the heartbeat reports. `link_runner.LinkRunner` reads Redis
and the clusters, calls these, and writes the results back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .payloads import (
    CopierReport,
    FlowEntry,
    FlowReport,
    FlowSpec,
    MirrorPartitionProgress,
    MirrorProgress,
    PartitionEntry,
)

# A mirror partition: (mirror topic, its topic id, partition); or a part of a merge flow,
# copied by one slot: ("flow:" + its name, its id, part) (no topic name holds a colon).
Ident = tuple[str, str, int]
Entry = PartitionEntry | FlowEntry  # what a copier needs to start copying an Ident
Holdings = list[dict[Ident, Entry]]  # per slot: the partitions it holds, with their entries
Reports = list[CopierReport | None]  # per slot: its copier of the link (None: it has none)


def wanted_partitions(
    mirrors: Iterable[str], topic_ids: Mapping[str, str], partitions: Mapping[str, int]
) -> set[Ident]:
    """Every partition of the mirror set whose topic id is known."""
    return {
        (m, topic_ids[m], p) for m in mirrors if m in topic_ids for p in range(partitions.get(m, 0))
    }


def flow_idents(flow: FlowSpec) -> list[Ident]:
    """A flow's parts: each copies the source partitions p with p % parts == part."""
    return [(f"flow:{flow['name']}", flow["id"], part) for part in range(flow.get("parts", 1))]


def is_flow(ident: Ident) -> bool:
    return ident[0].startswith("flow:")


def flow_progress(reports: Reports) -> dict[str, FlowReport]:
    """Each merge flow's report: its parts' (from the slots that hold them) as one."""
    parts: dict[str, list[FlowReport]] = {}
    for report in filter(None, reports):
        for key, part in report.get("flows", {}).items():
            parts.setdefault(key.split("/")[0], []).append(part)
    return {flow_id: _flow_whole(found) for flow_id, found in parts.items()}


def _flow_whole(parts: list[FlowReport]) -> FlowReport:
    if len(parts) == 1:
        return parts[0]
    return {
        "records": sum(p.get("records", 0) for p in parts),
        "skipped": sum(p.get("skipped", 0) for p in parts),
        "bytes": sum(p.get("bytes", 0) for p in parts),
        "records_per_sec": round(sum(p.get("records_per_sec", 0.0) for p in parts), 1),
        "last_write_ms": max(p.get("last_write_ms", 0) for p in parts),
        "latency_ms": max(p.get("latency_ms", -1) for p in parts),
        "error": "; ".join(dict.fromkeys(p["error"] for p in parts if p.get("error"))),
        "partitions": {k: v for p in parts for k, v in p.get("partitions", {}).items()},
    }


def not_held(assigned: Holdings, wanted: set[Ident]) -> list[Ident]:
    """The wanted partitions no slot holds yet, in a stable order."""
    held = {ident for slot in assigned for ident in slot}
    return sorted(wanted - held)


def assign(
    assigned: Holdings,
    home: Mapping[Ident, int],
    wanted: set[Ident],
    added: Mapping[Ident, Entry],
    others: list[int] | None = None,
) -> tuple[Holdings, dict[Ident, int]]:
    """The slots' new holdings, and each partition's slot: a held partition that is still
    wanted stays where it is, one no longer wanted goes, and each `added` one goes back to the
    slot that had it before (so it is never in two slots at once), else to the slot holding
    fewest, counting the partitions of other links each slot holds (`others`)."""
    slots = [{i: entry for i, entry in held.items() if i in wanted} for held in assigned]
    others = others or [0] * len(slots)
    homes = dict(home)
    for ident, entry in added.items():
        slot = homes.get(ident)
        if slot is None:
            slot = min(range(len(slots)), key=lambda s: (others[s] + len(slots[s]), s))
        homes[ident] = slot
        slots[slot][ident] = entry
    return slots, homes


def acknowledged(
    pending: list[tuple[int, int]], reports: Reports, version: int, acked: int
) -> tuple[int, list[tuple[int, int]]]:
    """The generation no copier writes outside of any more, and the (generation, version) plans
    still waiting: a plan is taken up once every reporting copier applied its version (a slot
    with no copier of the link has not started one yet, and will take up the latest, or its
    copier has stopped)."""
    applied = min((r["version"] for r in reports if r is not None), default=version)
    done = [generation for generation, v in pending if v <= applied]
    return max([acked, *done]), [(g, v) for g, v in pending if v > applied]


def grown(
    mirrors: Mapping[str, str], source_counts: Mapping[str, int], partitions: Mapping[str, int]
) -> dict[str, int]:
    """The mirror topics whose source has more partitions than they are known to have, with the
    source's count."""
    return {
        m: source_counts[s]
        for m, s in mirrors.items()
        if source_counts.get(s, 0) > partitions.get(m, 0)
    }


Counted = dict[tuple[int, str], tuple[int, int]]  # (slot, copier run) -> (records, bytes) seen


def written_since(counted: Counted, reports: Reports) -> tuple[Counted, int, int]:
    """What each copier run has written by its latest report, and the records and bytes added
    since `counted` (a restarted copier's run counts from 0)."""
    now, records, size = dict(counted), 0, 0
    for report in filter(None, reports):
        key = (report["slot"], report["run"])
        seen = now.get(key, (0, 0))
        records += max(0, report["records"] - seen[0])
        size += max(0, report["bytes"] - seen[1])
        now[key] = (report["records"], report["bytes"])
    return now, records, size


def rate(window: list[tuple[float, int, int]], i: int) -> float:
    """Per second over the window's samples (time, records, bytes): field `i` (1 records,
    2 bytes); one sample alone is no change."""
    first, last = window[0], window[-1]
    span = max(last[0] - first[0], 1e-9)
    return round(max(0, (last[i] - first[i]) / span), 1)


def mirror_progress(
    reports: Reports,
    high_watermarks: Mapping[tuple[str, int], int],
    mirrors: Mapping[str, str],
) -> tuple[MirrorProgress, bool, int, list[str]]:
    """From the copiers' reports: per mirror partition its offset run, whether offsets are
    translated, the source's high watermark at the last fetch, how far the source was read
    (past gaps: `read_upto`), the offset read next (`next_source`) and, if it holds for a
    schema, what it waits for (`schema_wait`); whether any partition is behind its source; the
    last write; the copiers' errors."""
    progress: MirrorProgress = {}
    behind, last_write, errors = False, 0, []
    for report in filter(None, reports):
        last_write = max(last_write, report["last_write_ms"])
        if report["error"]:
            errors.append(f"slot {report['slot']}: {report['error']}")
        for where, p in report["partitions"].items():
            partition, mirror = where.split("/", 1)
            source = mirrors.get(mirror)
            source_hw = high_watermarks.get((source, int(partition)), -1) if source else -1
            entry: MirrorPartitionProgress = {
                "run": p["run"],
                "translated": p["translated"],
                "source_hw": source_hw,
                "read_upto": p["read_upto"],
                "next_source": p["next_source"],
            }
            if "schema_wait" in p:
                entry["schema_wait"] = p["schema_wait"]
            progress.setdefault(mirror, {})[partition] = entry
            behind = behind or source_hw > p["read_upto"]
    return progress, behind, last_write, errors


class ProgressOf:
    """`mirror_progress`, made again only when a report, the high watermarks or the mirror set
    is another object than last time: each is replaced, never changed in place, when it
    changes (at 10,000 idle partitions, making it each beat was most of the driver's work)."""

    def __init__(self) -> None:
        self.made_from: tuple[object, ...] = ()
        self.made: tuple[MirrorProgress, bool, int, list[str]] | None = None

    def __call__(
        self,
        reports: Reports,
        high_watermarks: Mapping[tuple[str, int], int],
        mirrors: Mapping[str, str],
    ) -> tuple[MirrorProgress, bool, int, list[str]]:
        basis = (*reports, high_watermarks, mirrors)
        same = len(basis) == len(self.made_from) and all(
            a is b for a, b in zip(basis, self.made_from, strict=True)
        )
        if self.made is None or not same:
            self.made_from, self.made = basis, mirror_progress(reports, high_watermarks, mirrors)
        return self.made


def schema_waits(progress: MirrorProgress) -> list[int]:
    """The schema ids held partitions wait for (see `schema_gate`)."""
    return sorted(
        {
            int(i)
            for partitions in progress.values()
            for p in partitions.values()
            for i in p.get("schema_wait", {}).get("ids", ())
        }
    )
