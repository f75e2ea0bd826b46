"""The consumer groups of one mirror, as its page shows them: on each of its two clusters, the
groups that have committed offsets on its topic there (the source topic on the source, the
mirror topic on the destination), how far each is behind that topic's end, and what consumer
offset sync says of it (`offset_sync`: synced, and how; not selected; sync off).

Read from both clusters when asked (the mirror page loads it as a section of its own), never
for a list of mirrors: per cluster one list of groups, one offset fetch per group (sent at
once), one ListOffsets for the topic and one DescribeGroups for its readers, each bounded by
the admin client's timeout (ISTHMUS_KAFKA_TIMEOUT); both clusters are read at the same time.
A cluster that cannot be read is said in words beside what the other one answered.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, GroupOffsetSync, KafkaCluster, MirrorTopic
from replication.topics import offset_sync

# Groups asked for their offsets per cluster, at most: each is a request of its own.
MOST_GROUPS = 2000


@dataclass(frozen=True)
class GroupLag:
    """A group on one cluster, on the mirror's topic there."""

    group: str
    state: str  # Kafka's: Stable, Empty, PreparingRebalance, …
    members: int
    lag: int  # records between its committed offsets and the partitions' ends, summed
    partitions: int  # partitions of the topic it has committed offsets for


@dataclass(frozen=True)
class ClusterGroups:
    """What one cluster answered: its groups on the topic, or why it could not be read."""

    cluster: str
    topic: str
    groups: dict[str, GroupLag] = field(default_factory=dict)
    problem: str = ""
    unread: int = 0  # groups past MOST_GROUPS, not asked

    @property
    def groups_asked(self) -> int:
        return MOST_GROUPS


@dataclass(frozen=True)
class GroupRow:
    """One group across the two clusters, by its name on the source (the destination's may
    carry the link's prefix)."""

    group: str
    destination_group: str
    source: GroupLag | None
    destination: GroupLag | None
    sync: str  # in words: "in step", "behind the mirror", "not selected", "off", …
    sync_state: str  # GroupOffsetSync.State, or "" when sync does not have the group
    reason: str  # why, when sync has something to say

    @property
    def both(self) -> tuple[GroupLag | None, GroupLag | None]:
        return self.source, self.destination


@dataclass(frozen=True)
class MirrorGroups:
    source: ClusterGroups
    destination: ClusterGroups
    sync_enabled: bool
    rows: list[GroupRow]

    @property
    def sides(self) -> tuple[ClusterGroups, ClusterGroups]:
        return self.source, self.destination


def mirror_groups(mirror: MirrorTopic) -> MirrorGroups:
    """The groups on both clusters that read `mirror`'s topic, with their lag there and what
    offset sync does with them."""
    link = mirror.link
    registered = KafkaCluster.objects.filter(cluster_id=link.source_cluster_id).first()
    sides = [
        (
            registered.name if registered else "the source cluster",
            mirror.source_topic,
            source_admin,
        ),
        (mirror.destination.name, mirror.mirror_topic, destination_admin),
    ]
    # The clients are made here (a link's credentials are read from the database), the
    # clusters read on two threads: an unreachable one costs its timeout once, not twice.
    with ThreadPoolExecutor(max_workers=2) as pool:
        source, destination = pool.map(
            lambda side: side if isinstance(side, ClusterGroups) else _read_side(*side),
            [_client(name, topic, make, link) for name, topic, make in sides],
        )
    syncs = {row.group: row for row in link.group_syncs.all()}
    enabled = offset_sync.enabled(link)
    try:
        selection = offset_sync.group_filters(link) if enabled else None
    except offset_sync.NotConfigured:
        selection = []  # on, but selecting no group: every group is "not selected"
    # Each group by its source name, with its name on the destination; a group only the
    # destination has goes by its name there.
    pairs = {g: offset_sync.destination_group(link, g) for g in source.groups}
    named = set(pairs.values())
    pairs.update({g: g for g in destination.groups if g not in named})
    rows = []
    for group, on_destination in sorted(pairs.items()):
        sync, state, reason = _sync_words(group, enabled, selection, syncs.get(group), source)
        rows.append(
            GroupRow(
                group,
                on_destination,
                source.groups.get(group),
                destination.groups.get(on_destination),
                sync,
                state,
                reason,
            )
        )
    return MirrorGroups(source, destination, enabled, rows)


def _client(
    cluster: str, topic: str, make: Callable[[ClusterLink], KafkaAdmin], link: ClusterLink
) -> tuple[str, str, KafkaAdmin] | ClusterGroups:
    """(cluster, topic, its admin client) to read, or the ClusterGroups that says why there is
    no client (a link's client config the client refuses)."""
    try:
        return cluster, topic, make(link)
    except ReplicationError as exc:
        return ClusterGroups(cluster, topic, problem=str(exc))


def _read_side(cluster: str, topic: str, admin: KafkaAdmin) -> ClusterGroups:
    try:
        groups, unread = _readers(admin, topic)
    except TopicNotFound:
        return ClusterGroups(cluster, topic, problem=f"Topic {topic!r} is not on {cluster}.")
    except KafkaAdminError as exc:
        return ClusterGroups(cluster, topic, problem=str(exc))
    return ClusterGroups(cluster, topic, groups, unread=unread)


def _readers(admin: KafkaAdmin, topic: str) -> tuple[dict[str, GroupLag], int]:
    """The groups with offsets on `topic`, each with its lag there; and how many groups were
    left unasked (past MOST_GROUPS)."""
    every = sorted(admin.list_group_ids())
    asked = every[:MOST_GROUPS]
    committed = {
        group: {p: o for (t, p), o in offsets.items() if t == topic}
        for group, offsets in (admin.group_offsets(asked) if asked else {}).items()
    }
    committed = {group: offsets for group, offsets in committed.items() if offsets}
    wanted = sorted({(topic, p) for offsets in committed.values() for p in offsets})
    ends = admin.offsets(wanted) if wanted else {}
    details = admin.group_details(committed) if committed else {}
    found = {}
    for group, offsets in committed.items():
        detail = details.get(group)
        found[group] = GroupLag(
            group,
            detail.state if detail else "Unknown",
            len(detail.members) if detail else 0,
            sum(max(0, ends.get((topic, p), o) - o) for p, o in offsets.items()),
            len(offsets),
        )
    return found, len(every) - len(asked)


def _sync_words(
    group: str,
    enabled: bool,
    selection: list[filters.NameFilter] | None,
    synced: GroupOffsetSync | None,
    source: ClusterGroups,
) -> tuple[str, str, str]:
    """What offset sync does with `group`: (words, its GroupOffsetSync state or "", why)."""
    if not enabled:
        return "off", "", ""
    if synced is not None:
        return synced.get_state_display().lower(), synced.state, synced.reason
    if group not in source.groups:
        return "not on the source", "", "Only the destination has this group's offsets."
    if not filters.selected(selection or [], group):
        return (
            "not selected",
            "",
            "consumer.offset.group.filters does not select this group: its offsets stay on "
            "the source.",
        )
    return "not synced yet", "", "Selected: the next offset sync run writes it."
