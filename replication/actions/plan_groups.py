"""Which consumer groups read a plan's topics on each cluster, and whether the link's consumer
offset sync has them: a group moved to the other cluster resumes where it stopped only if its
offsets are synced there. Read when a plan is made (one list of groups and one offset fetch per
cluster, sent at once for all its groups); the sync's state is the offset syncer's
(`GroupOffsetSync`, offset_sync.py)."""

from __future__ import annotations

from typing import TypedDict

from infra.kafka_errors import KafkaAdminError
from replication.actions.plan_words import TopicOn
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.kafka import reachability
from replication.kafka.connections import destination_admin, source_admin
from replication.models import ClusterLink, GroupOffsetSync
from replication.topics import offset_sync

# Groups read per cluster, at most: beyond, the plan says how many it left out.
MAX_GROUPS = 500


class GroupReader(TypedDict):
    """A consumer group with committed offsets on a topic of the plan, on one cluster."""

    group: str
    cluster: str
    topic: str
    # IN_STEP, BEHIND_MIRROR, BEHIND_FLOW, SKIPPED or FAILED (the syncer's last word);
    # SELECTED (not synced yet), NOT_SELECTED, SYNC_OFF; on the link's destination COPY (the
    # synced copy of a source group) or OWN (its own group there, which no sync writes).
    sync: str
    words: str


def readers(
    link: ClusterLink, topics: list[TopicOn], cluster_names: tuple[str, str]
) -> tuple[list[GroupReader], list[str]]:
    """The groups reading `topics` on each side of `link`, and what could not be read."""
    found: list[GroupReader] = []
    problems: list[str] = []
    rows = list(link.group_syncs.all())
    for side, connect, name in (
        ("source", source_admin, cluster_names[0]),
        ("destination", destination_admin, cluster_names[1]),
    ):
        wanted = {t.topic for t in topics if t.side == side}
        if not wanted:
            continue
        down = not_answering(link, side, name)
        if down:
            problems.append(f"The consumer groups on {name} are not read: {down}")
            continue
        try:
            committed, more = _committed(connect(link))
        except (KafkaAdminError, ReplicationError) as exc:
            problems.append(f"The consumer groups on {name} could not be read: {exc}")
            continue
        if more:
            problems.append(f"{name} has {more} more consumer groups than the {MAX_GROUPS} read.")
        for group, offsets in sorted(committed.items()):
            for topic in sorted({t for t, _ in offsets} & wanted):
                sync, words = (_source_sync if side == "source" else _destination_sync)(
                    link, rows, group, topic, cluster_names
                )
                found.append(
                    {"group": group, "cluster": name, "topic": topic, "sync": sync, "words": words}
                )
    return found, problems


def not_answering(link: ClusterLink, side: str, name: str) -> str:
    """Why a side of `link` is not asked now ("" if it may be): the beat's probe found it not
    answering, so a plan does not wait out a timeout for it (a failover's source is down)."""
    cluster_id = link.source_cluster_id if side == "source" else link.destination.cluster_id
    found = reachability.latest().get(cluster_id)
    if found is None or found.reachable:
        return ""
    return f"{name} did not answer the console's last probe ({found.error or 'no answer'})."


def _committed(admin) -> tuple[dict, int]:
    ids = sorted(admin.list_group_ids())
    return admin.group_offsets(ids[:MAX_GROUPS]), max(0, len(ids) - MAX_GROUPS)


def _source_sync(
    link: ClusterLink, rows: list[GroupOffsetSync], group: str, topic: str, names: tuple[str, str]
) -> tuple[str, str]:
    row = next((r for r in rows if r.group == group), None)
    if row is not None and _copies(link, topic) & row.topics:
        words = f"synced to {row.destination_group} on {names[1]}: {row.get_state_display()}"
        return row.state, words + (f" ({row.reason})" if row.reason else "")
    if not offset_sync.enabled(link):
        return "SYNC_OFF", f"not synced: consumer offset sync is off on link {link.name}"
    try:
        chosen = filters.selected(offset_sync.group_filters(link), group)
    except ReplicationError:
        chosen = False
    if chosen:
        return "SELECTED", f"selected by link {link.name}'s group filters; not synced yet"
    return "NOT_SELECTED", f"not synced: link {link.name}'s group filters leave it out"


def _copies(link: ClusterLink, topic: str) -> set[str]:
    """The topics on the link's destination a source topic's offsets are synced on: its
    mirror and its merge flows' destinations."""
    mirrors = link.mirrors.filter(source_topic=topic).values_list("mirror_topic", flat=True)
    flows = link.flows.filter(source_topic=topic).values_list("destination_topic", flat=True)
    return {*mirrors, *flows}


def _destination_sync(
    link: ClusterLink, rows: list[GroupOffsetSync], group: str, topic: str, names: tuple[str, str]
) -> tuple[str, str]:
    row = next((r for r in rows if r.destination_group == group and topic in r.topics), None)
    if row is not None:
        return "COPY", f"the synced copy of {row.group} on {names[0]}: {row.get_state_display()}"
    return "OWN", f"its own group on {names[1]}: no offset sync writes it"
