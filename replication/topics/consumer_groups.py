"""The consumer groups on a link's two clusters, read one way for the approver's plan
(actions/plan_groups.py) and the mirror page (mirror_groups.py): which groups have committed
offsets on given topics of one cluster, and what the link's consumer offset sync does with each
(the syncer's rows, `GroupOffsetSync`, its switch and its group filters; offset_sync.py).

A cluster the beat's probe last found down (kafka/reachability.py) is not asked: a failover is
asked for because its source is lost, and neither a plan nor a page waits out a timeout there.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.kafka_admin import KafkaAdmin
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.kafka import reachability
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, GroupOffsetSync
from replication.topics import offset_sync

# A group's committed offsets on the topics asked: {(topic, partition): offset}.
Offsets = dict[tuple[str, int], int]
Sync = GroupOffsetSync.State
# States that concern the group whole, whatever its topics: it was not written at all.
_WHOLE_GROUP = (Sync.SKIPPED, Sync.FAILED)


def not_answering(link: ClusterLink, side: str, name: str) -> str:
    """Why `side` ("source" or "destination") of `link` is not asked now ("" if it may be):
    the beat's probe found it not answering."""
    cluster_id = link.source_cluster_id if side == "source" else link.destination.cluster_id
    found = reachability.latest().get(cluster_id)
    if found is None or found.reachable:
        return ""
    return f"{name} did not answer the console's last probe ({found.error or 'no answer'})."


def admin(link: ClusterLink, side: str) -> KafkaAdmin:
    """The admin client of `side` of `link` (ReplicationError: a config the client refuses)."""
    return source_admin(link) if side == "source" else destination_admin(link)


def committed(admin: KafkaAdmin, topics: set[str], most: int) -> tuple[dict[str, Offsets], int]:
    """The committed offsets on `topics` of the first `most` groups by name (each a request
    of its own, all sent at once), groups with none left out; and how many groups were not
    asked. Raises KafkaAdminError."""
    ids = sorted(admin.list_group_ids())
    asked = ids[:most]
    found = {}
    for group, offsets in (admin.group_offsets(asked) if asked else {}).items():
        on = {tp: offset for tp, offset in offsets.items() if tp[0] in topics}
        if on:
            found[group] = on
    return found, len(ids) - len(asked)


@dataclass(frozen=True)
class GroupSync:
    """What offset sync does with a group on one topic. `state`: the syncer's row's (IN_STEP,
    BEHIND_MIRROR, BEHIND_FLOW, SKIPPED, FAILED; `row` is that row), else SELECTED (not synced
    yet), NOT_SELECTED or SYNC_OFF; of a group on the destination, COPY (the synced copy of
    `row.group`) or OWN (its own, which no sync writes)."""

    state: str
    row: GroupOffsetSync | None = None


class LinkSyncs:
    """The link's offset sync as it stands, read once (its rows, switch and filters) and asked
    of each group."""

    def __init__(self, link: ClusterLink):
        self.link = link
        self.enabled = offset_sync.enabled(link)
        self.rows = list(link.group_syncs.all())
        self.by_group = {row.group: row for row in self.rows}  # one row a group (a constraint)
        try:
            self.selection = offset_sync.group_filters(link) if self.enabled else []
        except ReplicationError:  # on, but selecting no group: every group is not selected
            self.selection = []

    def of_source(self, group: str, copies: set[str]) -> GroupSync:
        """A source group's sync onto `copies`, the destination's topics its offsets there
        would be on (a mirror topic, merge flows' topics). Sync turned off says SYNC_OFF even
        while the syncer's old rows are still being forgotten (syncers._forget_disabled)."""
        if not self.enabled:
            return GroupSync("SYNC_OFF")
        row = self.by_group.get(group)
        if row is not None and (row.state in _WHOLE_GROUP or row.topics & copies):
            return GroupSync(row.state, row)
        if filters.selected(self.selection, group):
            return GroupSync("SELECTED")
        return GroupSync("NOT_SELECTED")

    def of_destination(self, group: str, topic: str) -> GroupSync:
        """A destination group on `topic` there: the synced copy of a source group, or its own."""
        row = next(
            (r for r in self.rows if r.destination_group == group and topic in r.topics), None
        )
        return GroupSync("COPY", row) if row is not None else GroupSync("OWN")
