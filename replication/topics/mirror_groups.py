"""The consumer groups of one mirror, as its page shows them: on each of its two clusters, the
groups that have committed offsets on its topic there (the source topic on the source, the
mirror topic on the destination), how far each is behind that topic's end, and what consumer
offset sync says of it (synced, and how; not selected; sync off). The groups are read, and
offset sync asked of each, as the approver's plan does (`consumer_groups`).

Read from both clusters when asked (the mirror page loads it as a section of its own), never
for a list of mirrors: per cluster one list of groups, one offset fetch per group (sent at
once), one ListOffsets for the topic and one DescribeGroups for its readers, each bounded by
the admin client's timeout (ISTHMUS_KAFKA_TIMEOUT); both clusters are read at the same time,
and one the beat's probe last found down is not asked. A cluster that cannot be read is said
in words beside what the other one answered.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from replication.core.errors import ReplicationError
from replication.models import ClusterLink, KafkaCluster, MirrorTopic
from replication.topics import consumer_groups, offset_sync

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
        ("source", registered.name if registered else "the source cluster", mirror.source_topic),
        ("destination", mirror.destination.name, mirror.mirror_topic),
    ]
    # The clients are made here (a link's credentials are read from the database), the
    # clusters read on two threads: an unreachable one costs its timeout once, not twice.
    with ThreadPoolExecutor(max_workers=2) as pool:
        source, destination = pool.map(
            lambda side: side if isinstance(side, ClusterGroups) else _read_side(*side),
            [_client(link, *side) for side in sides],
        )
    syncs = consumer_groups.LinkSyncs(link)
    # Each group by its source name, with its name on the destination; a group only the
    # destination has goes by its name there.
    pairs = {g: offset_sync.destination_group(link, g) for g in source.groups}
    named = set(pairs.values())
    pairs.update({g: g for g in destination.groups if g not in named})
    rows = []
    for group, on_destination in sorted(pairs.items()):
        if group in source.groups:
            sync = syncs.of_source(group, {mirror.mirror_topic})
        else:
            sync = syncs.of_destination(group, mirror.mirror_topic)
        words, reason = _sync_words(sync)
        rows.append(
            GroupRow(
                group,
                on_destination,
                source.groups.get(group),
                destination.groups.get(on_destination),
                words,
                sync.row.state if sync.row is not None else "",
                reason,
            )
        )
    return MirrorGroups(source, destination, syncs.enabled, rows)


def _client(
    link: ClusterLink, side: str, cluster: str, topic: str
) -> tuple[str, str, KafkaAdmin] | ClusterGroups:
    """(cluster, topic, its admin client) to read, or the ClusterGroups that says why it is
    not read: the beat's probe found it down, or the client refuses the link's config."""
    down = consumer_groups.not_answering(link, side, cluster)
    if down:
        return ClusterGroups(cluster, topic, problem=down)
    try:
        return cluster, topic, consumer_groups.admin(link, side)
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
    found, unread = consumer_groups.committed(admin, {topic}, MOST_GROUPS)
    wanted = sorted({tp for offsets in found.values() for tp in offsets})
    ends = admin.offsets(wanted) if wanted else {}
    details = admin.group_details(found) if found else {}
    lags = {}
    for group, offsets in found.items():
        detail = details.get(group)
        lags[group] = GroupLag(
            group,
            detail.state if detail else "Unknown",
            len(detail.members) if detail else 0,
            sum(max(0, ends.get(tp, o) - o) for tp, o in offsets.items()),
            len(offsets),
        )
    return lags, unread


def _sync_words(sync: consumer_groups.GroupSync) -> tuple[str, str]:
    """What offset sync does with a group, for the page: (its badge's words, why)."""
    if sync.state in ("COPY", "OWN"):  # only the destination has the group's offsets there
        return "not on the source", "Only the destination has this group's offsets."
    if sync.row is not None:
        return sync.row.get_state_display().lower(), sync.row.reason
    return {
        "SYNC_OFF": ("off", ""),
        "NOT_SELECTED": (
            "not selected",
            "consumer.offset.group.filters does not select this group: its offsets stay on "
            "the source.",
        ),
        "SELECTED": ("not synced yet", "Selected: the next offset sync run writes it."),
    }[sync.state]
