"""Consumer offset sync for merge flows: a group's place in a flow's source topic, translated
to a place in its destination topic, so a consumer moved there goes on without skipping a
record, reading again at most a bound that the flow's page shows per group.

A merge flow keeps no offsets, so a place translates only through checkpoints: the engine's
exact pairs per source partition, `(next, dest)` (spark_jobs/merging.py), sampled by the beat
into `FlowCheckpoint` rows (sparse: one per partition per sample that moved). Only some shapes
have a place that neither skips nor repeats without bound (`rule`):

- One-to-one, the flow the only writer of its destination topic: a group at `c` moves to the
  `dest` of the newest checkpoint with `next <= c`. It may read again the records between
  that checkpoint and the first with `next >= c`.
- One-to-one both ways between the same two topics (active-active, flow F from A to B and R
  from B to A): the group read A's topic, which holds A's own records and R's copies of B's.
  On B it moves to the smaller of F's place (as above: A's records it had not read lie above
  it) and R's source `next` of R's newest checkpoint whose `dest <= c` (B's records below it
  were copied below `c`, so were read). If R's newest checkpoint kept has `dest < c`, what R
  copied since may lie below `c` too: the bound grows by `c - dest`. A group's place written
  by R's own sync is not synced back, or two idle sides would walk each other back.
- By key, several writers into the destination (an aggregate), or records of others in the
  destination with no flow back: no place in the source stands for a place there. The flow's
  page says so; its groups are left alone.

A group past the newest checkpoint is BEHIND_FLOW (left where it is until the copy passes
it); groups with active members on the destination are never written (offset_sync).
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from replication.models import ClusterLink, FlowCheckpoint, GroupOffsetSync, MergeFlow
from replication.topics.merge_flows import FlowStatus

log = logging.getLogger(__name__)

KEEP_ALL = timedelta(minutes=15)  # every checkpoint sampled in the last 15 minutes
THIN = 60  # seconds: older ones, the newest in each minute
KEEP = timedelta(days=7)  # none older
Point = tuple[int, int]  # (source next, destination next)


# --- checkpoints ----------------------------------------------------------------------------


def record_checkpoints(flow: MergeFlow, status: FlowStatus, now: datetime) -> None:
    """Keep the checkpoints the engine's last report of `flow` holds that moved since the last
    kept, and whether others write into its destination topic."""
    kept = dict(flow.checkpointed)
    others = flow.others_write
    new = []
    for partition, report in status.partitions.items():
        others = others or report.get("others", False)
        if not report.get("checkpoint"):
            continue
        point = list(report["checkpoint"])
        if kept.get(str(partition)) != point:
            kept[str(partition)] = point
            new.append(FlowCheckpoint(flow=flow, partition=partition, taken_at=now, **_row(point)))
    if not new and others == flow.others_write:
        return
    FlowCheckpoint.objects.bulk_create(new)
    MergeFlow.objects.filter(pk=flow.pk).update(checkpointed=kept, others_write=others)
    if others and not flow.others_write:
        log.info(
            "Merge flow %s: others write into %s too; its consumer offsets are synced only if "
            "a flow copies that topic back",
            flow.name,
            flow.destination_topic,
        )
    flow.checkpointed, flow.others_write = kept, others


def _row(point: list[int]) -> dict[str, int]:
    return {"source_next": point[0], "destination_next": point[1]}


def thin(now: datetime) -> None:
    """Checkpoints past KEEP_ALL: the newest of each minute kept (a checkpoint stands for all
    before it, so only the bound widens), none past KEEP. Each run thins what aged since the
    one before (the beat's SAMPLE_S apart), with room to spare."""
    FlowCheckpoint.objects.filter(taken_at__lt=now - KEEP).delete()
    aged = list(
        FlowCheckpoint.objects.filter(
            taken_at__lt=now - KEEP_ALL, taken_at__gte=now - KEEP_ALL - timedelta(minutes=10)
        ).values_list("pk", "flow_id", "partition", "taken_at", "source_next")
    )
    newest: dict[tuple, tuple[int, int]] = {}
    for pk, flow, partition, taken_at, source_next in aged:
        bucket = (flow, partition, int(taken_at.timestamp()) // THIN)
        if bucket not in newest or source_next > newest[bucket][1]:
            newest[bucket] = (pk, source_next)
    kept = {pk for pk, _ in newest.values()}
    dropped = [pk for pk, *_ in aged if pk not in kept]
    if dropped:
        FlowCheckpoint.objects.filter(pk__in=dropped).delete()


def checkpoints(flow: MergeFlow) -> dict[int, list[Point]]:
    """The flow's checkpoints per source partition, oldest first."""
    found: dict[int, list[Point]] = {}
    rows = flow.checkpoints.values_list("partition", "source_next", "destination_next")
    for partition, source_next, destination_next in rows.order_by("partition", "source_next"):
        found.setdefault(partition, []).append((source_next, destination_next))
    return found


# --- which flows translate ------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """How a flow's groups translate: alone, or with `back` (the flow the other way); or
    `refused`, saying why not."""

    back: MergeFlow | None = None
    refused: str = ""


def rule(flow: MergeFlow) -> Rule:
    """Whether a group's place in the flow's source stands for a place in its destination."""
    if flow.mapping != MergeFlow.Mapping.ONE_TO_ONE:
        return Rule(
            refused="Its partitions are mapped by key: a source partition's records spread over "
            "the destination's partitions, so no place there stands for a group's place in the "
            "source. Groups are not synced for it."
        )
    writers = MergeFlow.objects.filter(
        destination=flow.destination, destination_topic=flow.destination_topic
    ).exclude(pk=flow.pk)
    if writers.exists():
        return Rule(
            refused=f"{flow.destination_topic} is an aggregate: {writers.count()} other flow(s) "
            "write into it too, so a group's place in one source topic is no place in it. "
            "Groups are not synced for it."
        )
    source_cluster = flow.link.source_cluster_id
    destination_cluster = flow.destination.cluster_id
    into_source = MergeFlow.objects.filter(
        destination__cluster_id=source_cluster, destination_topic=flow.source_topic
    ).select_related("link", "destination")
    back = [
        f
        for f in into_source
        if f.link.source_cluster_id == destination_cluster
        and f.source_topic == flow.destination_topic
        and f.mapping == MergeFlow.Mapping.ONE_TO_ONE
    ]
    if len(back) != len(into_source) or len(back) > 1:
        return Rule(
            refused=f"{flow.source_topic} on the source is fed by other flows too, so a group "
            "there read records that this flow does not bring here. Groups are not synced "
            "for it."
        )
    if back:
        return Rule(back=back[0])
    if flow.others_write:
        return Rule(
            refused=f"Others write into {flow.destination_topic} too, and no flow copies it "
            "back to the source: a group moved here would skip their records or read them "
            "out of place. Groups are not synced for it."
        )
    return Rule()


# --- translation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """Where a group goes in a destination partition, and how many records it may read again
    there at most; `behind` when it is past the newest checkpoint (left where it is)."""

    offset: int = -1
    may_repeat: int = 0
    behind: bool = False


# Every flow's first checkpoint, whatever it copied: no record lies below offset 0.
START: Point = (0, 0)


def translate(committed: int, forward: list[Point], back: list[Point] | None = None) -> Place:
    """A group's place `committed` in a source partition, through the flow's checkpoints of
    that partition (`forward`, oldest first) and, for an active-active pair, the checkpoints
    of the flow the other way (`back`: its source is the destination partition, its
    destination the source partition)."""
    forward = [START, *forward]
    sources = [s for s, _ in forward]
    above = bisect.bisect_left(sources, committed)
    if above == len(forward):
        return Place(behind=True)
    below = bisect.bisect_right(sources, committed) - 1
    offset, upper = forward[below][1], forward[above][1]
    since = 0  # records the way back copied below `committed` after its newest checkpoint
    if back is not None:
        back = [START, *back]
        # The way back's places in the source partition rise with its own source's.
        landed = [d for _, d in back]
        seen = bisect.bisect_right(landed, committed) - 1
        after = bisect.bisect_left(landed, committed)
        offset = min(offset, back[seen][0])
        if after < len(back):
            upper = max(upper, back[after][0])
        else:
            # Its newest checkpoint kept lies below the group's place: what it copied since
            # landed there at or past that checkpoint, so the group may have read it already.
            upper = max(upper, back[-1][0])
            since = committed - back[-1][1]
    return Place(offset, max(0, upper - offset) + since)


@dataclass
class Places:
    """What the flows of a link make of its groups' places, for offset_sync."""

    targets: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> key -> offset
    may_repeat: dict[str, dict[str, int]] = field(default_factory=dict)
    behind: dict[str, list[str]] = field(default_factory=dict)  # group -> keys


def places(
    link: ClusterLink, committed: dict[str, dict[tuple[str, int], int]], partitions: dict[str, int]
) -> Places:
    """Each selected group's places in the link's flows' source topics (`committed`),
    translated into their destination topics (of `partitions` partitions each: those not
    there yet are left out)."""
    found = Places()
    for flow in link.flows.select_related("link", "destination"):
        ruled = rule(flow)
        if ruled.refused or flow.destination_topic not in partitions:
            continue
        forward = checkpoints(flow)
        back = checkpoints(ruled.back) if ruled.back else None
        walked_back = _written_back(ruled.back, flow) if ruled.back else {}
        for group, offsets in committed.items():
            for (topic, p), offset in offsets.items():
                if topic != flow.source_topic or p >= partitions[flow.destination_topic]:
                    continue
                if walked_back.get((group, p)) == offset:
                    continue  # the way back put it there: syncing it again would walk it back
                key = f"{flow.destination_topic}/{p}"
                place = translate(
                    offset, forward.get(p, []), None if back is None else back.get(p, [])
                )
                if place.behind:
                    found.behind.setdefault(group, []).append(key)
                else:
                    found.targets.setdefault(group, {})[key] = place.offset
                    found.may_repeat.setdefault(group, {})[key] = place.may_repeat
    return found


def _written_back(back: MergeFlow, flow: MergeFlow) -> dict[tuple[str, int], int]:
    """The places in `flow`'s source topic that the way back's offset sync wrote, per group
    on the source and partition."""
    rows = GroupOffsetSync.objects.filter(link=back.link)
    prefix = f"{flow.source_topic}/"
    return {
        (row.destination_group, int(key[len(prefix) :])): offset
        for row in rows
        for key, offset in row.offsets.items()
        if key.startswith(prefix)
    }


# --- what the flow's page shows -------------------------------------------------------------


@dataclass(frozen=True)
class GroupPlace:
    group: str
    destination_group: str
    state: str
    offsets: dict[int, int]
    may_repeat: int  # records, over the partitions
    reason: str


def groups(flow: MergeFlow) -> list[GroupPlace]:
    """The groups the flow's link syncs into its destination topic, as last synced."""
    prefix = f"{flow.destination_topic}/"
    shown = []
    for row in flow.link.group_syncs.all():
        offsets = {int(k[len(prefix) :]): o for k, o in row.offsets.items() if k.startswith(prefix)}
        repeat = sum(n for k, n in row.may_repeat.items() if k.startswith(prefix))
        if offsets or prefix in row.reason:  # (BEHIND_FLOW names the partitions)
            shown.append(
                GroupPlace(row.group, row.destination_group, row.state, offsets, repeat, row.reason)
            )
    return shown
