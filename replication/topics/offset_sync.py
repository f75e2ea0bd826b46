"""Consumer offset sync: the committed offsets of the source's consumer groups that a link's
`consumer.offset.group.filters` selects, written to the same groups on the destination, so a
consumer moved to a mirror resumes exactly where it stopped on the source.

Translated exactly, per partition: a mirror partition whose offsets equal its source's gets
the same offset; one whose offsets differ (compaction, transactions, a later start) gets the
offset its durable translation gives (`spark_jobs.translation`): the next record the consumer
would have read. Never past what the mirror holds: a group ahead of the copy gets the mirror's
end and shows BEHIND_MIRROR until the copy passes it.

Kafka refuses offsets for a group with active members, and a group running on the destination
is never overwritten: it shows SKIPPED with the reason. Offsets the destination already holds
are not written again; what it holds is remembered per group (`GroupOffsetSync.offsets`), so a
run reads the destination only for groups it has not seen. Admin calls per run: one list of
groups, one offset fetch per selected group (sent at once: Kafka's client takes one group per
request), one ListOffsets and one DescribeTopics for all mirror partitions, and for the groups
whose offsets changed one DescribeGroups and one offset commit each.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from infra.kafka_admin import KafkaAdmin
from infra.kafka_groups import GroupOffsets
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.engine import status as stream_status
from replication.kafka import translations
from replication.models import ClusterLink, GroupOffsetSync, MirrorTopic
from replication.topics import flow_offsets
from spark_jobs import translation

log = logging.getLogger(__name__)

# Mirrors whose groups are synced; a promote syncs its mirror one last time before it stops.
SYNCING = frozenset(
    {MirrorTopic.State.ACTIVE, MirrorTopic.State.PAUSED, MirrorTopic.State.LINK_PAUSED}
)
Sync = GroupOffsetSync.State
PROBLEM = "consumer offsets"  # its key in ClusterLink.sync_problems
_IDLE_STATES = ("Empty", "Dead")


@dataclass
class Outcome:
    """What one run did, by group state."""

    groups: dict[str, str] = field(default_factory=dict)  # group -> state
    written: set[str] = field(default_factory=set)  # groups committed on the destination

    def count(self, state: str) -> int:
        return sum(1 for s in self.groups.values() if s == state)


class NotConfigured(ReplicationError):
    """Offset sync is enabled but selects no group; the message says what to do."""


def enabled(link: ClusterLink) -> bool:
    return link.config("consumer.offset.sync.enable") == "true"


def group_filters(link: ClusterLink) -> list[filters.NameFilter]:
    found = filters.including(link.config("consumer.offset.group.filters"), filters.GROUPS)
    if found is None:
        raise NotConfigured(
            "consumer.offset.sync.enable is true, but consumer.offset.group.filters includes "
            'no group, so no offsets are synced. Set it, e.g. {"groupFilters": [{"name": "*", '
            '"patternType": "LITERAL", "filterType": "INCLUDE"}]}.'
        )
    return found


def destination_group(link: ClusterLink, group: str) -> str:
    if link.config("consumer.group.prefix.enable") == "true":
        return link.prefix + group
    return group


def sync_offsets(
    link: ClusterLink,
    now: datetime,
    source: KafkaAdmin,
    destination: KafkaAdmin,
    only: list[MirrorTopic] | None = None,
) -> Outcome:
    """One run over the link's syncing mirrors, or over `only` those (a promote's last sync).

    Raises NotConfigured, or KafkaAdminError when a cluster does not answer (the next run
    tries again from scratch: nothing of a run is kept but what it finished).
    """
    selection = group_filters(link)
    mirrors = list(only) if only is not None else list(link.mirrors.filter(state__in=SYNCING))
    flows = [] if only is not None else list(link.flows.all())
    by_source = {m.source_topic: m for m in mirrors}
    groups = sorted(g for g in source.list_group_ids() if filters.selected(selection, g))
    committed = source.group_offsets(groups) if by_source or flows else {}
    topics = destination.describe_topics(
        [m.mirror_topic for m in mirrors] + [f.destination_topic for f in flows]
    )
    # Only partitions the mirror has (a source partition added since may not be there yet).
    wanted = {
        (by_source[t].mirror_topic, p)
        for offsets in committed.values()
        for (t, p) in offsets
        if t in by_source
        and by_source[t].mirror_topic in topics
        and p < topics[by_source[t].mirror_topic].partitions
    }
    ends = destination.offsets(sorted(wanted)) if wanted else {}
    ids = {topics[t].topic_id for t, _ in wanted}
    runs = translations.runs(link.destination, ids) if wanted else {}

    read_upto = _read_upto(link) if wanted else {}
    targets: dict[str, dict[str, int]] = {}
    behind: dict[str, list[str]] = {}
    for group, offsets in committed.items():
        for (t, p), offset in offsets.items():
            mirror = by_source.get(t)
            if mirror is None or (mirror.mirror_topic, p) not in ends:
                continue
            key = f"{mirror.mirror_topic}/{p}"
            end = ends[mirror.mirror_topic, p]
            partition_runs = runs.get((topics[mirror.mirror_topic].topic_id, p))
            partition_runs = (partition_runs or translation.Runs()).upto(end)
            target = partition_runs.to_destination(offset)
            # Past the mirror's end, unless only offsets without records lie in between
            # (transaction markers, aborted or compacted records) that the stream read past.
            if offset > max(partition_runs.next_source(end), read_upto.get(key, -1)):
                behind.setdefault(group, []).append(key)
            targets.setdefault(group, {})[key] = min(target, end)
    merged = flow_offsets.Places()
    if flows:
        merged = flow_offsets.places(link, committed, {t: d.partitions for t, d in topics.items()})
        for group, flow_targets in merged.targets.items():
            targets.setdefault(group, {}).update(flow_targets)
    return _apply(link, now, destination, targets, behind, merged, full=only is None)


def _apply(
    link: ClusterLink,
    now: datetime,
    destination: KafkaAdmin,
    targets: dict[str, dict[str, int]],
    behind: dict[str, list[str]],
    merged: flow_offsets.Places,
    full: bool,
) -> Outcome:
    rows = {row.group: row for row in link.group_syncs.all()}
    names = {g: destination_group(link, g) for g in [*targets, *merged.behind]}
    unseen = [names[g] for g in names if g not in rows]
    held = destination.group_offsets(unseen) if unseen else {}
    known: dict[str, dict[str, int]] = {}
    for group in names:
        if group in rows:
            known[group] = dict(rows[group].offsets)
        else:
            known[group] = {f"{t}/{p}": o for (t, p), o in held.get(names[group], {}).items()}
    changes = {
        group: {key: o for key, o in target.items() if known[group].get(key) != o}
        for group, target in targets.items()
    }
    changes = {g: c for g, c in changes.items() if c}

    outcome = Outcome()
    reasons: dict[str, str] = {}
    if changes:
        _write(destination, names, changes, known, outcome, reasons)

    for group in names:
        if group in reasons:
            state = Sync.SKIPPED if "active member" in reasons[group] else Sync.FAILED
        elif group in merged.behind:
            state = Sync.BEHIND_FLOW
            reasons[group] = (
                "The group has read further than the merge flow's newest checkpoint "
                f"({', '.join(sorted(merged.behind[group]))}); it is synced there once the "
                "flow has copied past it."
            )
        elif group in behind:
            state = Sync.BEHIND_MIRROR
            reasons[group] = (
                "The group has read further than the mirror has copied "
                f"({', '.join(sorted(behind[group]))}); it has the mirror's end until the copy "
                "passes it."
            )
        else:
            state = Sync.IN_STEP
        outcome.groups[group] = state
    _save(link, now, rows, names, known, merged.may_repeat, outcome, reasons, full)
    if outcome.written:
        log.info(
            "Synced the offsets of %d consumer group(s) over link %s to %s",
            len(outcome.written),
            link.name,
            link.destination.name,
        )
    return outcome


def _write(
    destination: KafkaAdmin,
    names: dict[str, str],
    changes: dict[str, dict[str, int]],
    known: dict[str, dict[str, int]],
    outcome: Outcome,
    reasons: dict[str, str],
) -> None:
    """Write the changed offsets of the groups that have no active member on the destination;
    each group written joins `outcome.written` (and `known`), each left alone gets a reason."""
    info = destination.describe_groups(names[g] for g in changes)
    writable: dict[str, GroupOffsets] = {}
    for group, change in changes.items():
        state = info.get(names[group])
        if state is not None and (state.members or state.state not in _IDLE_STATES):
            reasons[group] = (
                f"{names[group]!r} has {state.members} active member(s) on the destination "
                f"({state.state}): its offsets are not overwritten. Stop its consumers "
                "there, or exclude the group from consumer.offset.group.filters."
            )
            continue
        writable[names[group]] = {_partition(key): o for key, o in change.items()}
    refused = destination.alter_group_offsets(writable) if writable else {}
    for group in changes:
        why = refused.get(names[group])
        if names[group] in writable and why is None:
            known[group].update(changes[group])
            outcome.written.add(group)
        elif why is not None:
            reasons[group] = f"{names[group]!r} was not written: {why}."


def _save(
    link: ClusterLink,
    now: datetime,
    rows: dict[str, GroupOffsetSync],
    names: dict[str, str],
    known: dict[str, dict[str, int]],
    may_repeat: dict[str, dict[str, int]],
    outcome: Outcome,
    reasons: dict[str, str],
    full: bool,
) -> None:
    new: list[GroupOffsetSync] = []
    changed: list[GroupOffsetSync] = []
    for group in outcome.groups:
        row = rows.get(group) or GroupOffsetSync(link=link, group=group)
        offsets = known[group] if full else {**row.offsets, **known[group]}
        fields = {
            "destination_group": names[group],
            "state": outcome.groups[group],
            "reason": reasons.get(group, ""),
            "offsets": offsets,
            "may_repeat": may_repeat.get(group, {}) if full else row.may_repeat,
        }
        if group in outcome.written:
            fields["written_at"] = now
        if row.pk is not None and all(getattr(row, k) == v for k, v in fields.items()):
            continue
        for key, value in fields.items():
            setattr(row, key, value)
        row.changed_at = now
        (changed if row.pk else new).append(row)
    columns = [
        "destination_group",
        "state",
        "reason",
        "offsets",
        "may_repeat",
        "written_at",
        "changed_at",
    ]
    # Two syncs of one link may meet (a reverse syncs its groups back while the beat's sync
    # runs): a group's row the other made meanwhile is updated, not inserted twice.
    GroupOffsetSync.objects.bulk_create(
        new,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["link", "group"],
        update_fields=columns,
    )
    GroupOffsetSync.objects.bulk_update(changed, columns, batch_size=500)
    if full:  # groups no longer selected, or with no offsets on a mirror: no longer shown
        link.group_syncs.exclude(group__in=list(outcome.groups)).delete()


@dataclass
class Status:
    """Offset sync as a link's or a mirror's page shows it: the groups not in step first, at
    most `limit` of them, and how many there are in each state."""

    enabled: bool
    interval_ms: int
    last_run: datetime | None
    problem: str
    rows: list[GroupOffsetSync]
    counts: dict[str, int]
    total: int


def status(link: ClusterLink, mirror_topic: str | None = None, limit: int = 200) -> Status:
    rows = list(link.group_syncs.all())
    if mirror_topic is not None:
        rows = [r for r in rows if mirror_topic in r.topics]
    rows.sort(key=lambda r: (r.state == Sync.IN_STEP, r.group))
    counts: dict[str, int] = {}
    for row in rows:
        label = row.get_state_display().lower()
        counts[label] = counts.get(label, 0) + 1
    return Status(
        enabled=enabled(link),
        interval_ms=link.int_config("consumer.offset.sync.ms"),
        last_run=link.offsets_synced_at,
        problem=link.sync_problems.get(PROBLEM, ""),
        rows=rows[:limit],
        counts=counts,
        total=len(rows),
    )


def _read_upto(link: ClusterLink) -> dict[str, int]:
    """How far the link's stream reports it has read each partition of the source, gaps
    included: {"mirror topic/partition": source offset}."""
    return {
        f"{topic}/{partition}": report.get("read_upto", -1)
        for topic, partitions in stream_status.progress(link).partitions.items()
        for partition, report in partitions.items()
    }


def _partition(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition("/")
    return topic, int(partition)
