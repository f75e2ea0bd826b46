"""Which consumer groups read a plan's topics on each cluster, and whether the link's consumer
offset sync has them: a group moved to the other cluster resumes where it stopped only if its
offsets are synced there. Read when a plan is made (one list of groups and one offset fetch per
cluster, sent at once for all its groups) through topics/consumer_groups.py, which the mirror
page's groups section reads with too; this module puts them in the plan's words."""

from __future__ import annotations

from typing import TypedDict

from infra.kafka_errors import KafkaAdminError
from replication.actions.plan_words import TopicOn
from replication.core.errors import ReplicationError
from replication.models import ClusterLink
from replication.topics import consumer_groups

# Groups read per cluster, at most: beyond, the plan says how many it left out. Fewer than the
# mirror page reads once asked: the request page reads its plan again every 15 s.
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
    syncs = consumer_groups.LinkSyncs(link)
    for side, name in zip(("source", "destination"), cluster_names, strict=True):
        wanted = {t.topic for t in topics if t.side == side}
        if not wanted:
            continue
        down = consumer_groups.not_answering(link, side, name)
        if down:
            problems.append(f"The consumer groups on {name} are not read: {down}")
            continue
        try:
            admin = consumer_groups.admin(link, side)
            committed, more = consumer_groups.committed(admin, wanted, MAX_GROUPS)
        except (KafkaAdminError, ReplicationError) as exc:
            problems.append(f"The consumer groups on {name} could not be read: {exc}")
            continue
        if more:
            problems.append(f"{name} has {more} more consumer groups than the {MAX_GROUPS} read.")
        copies = {topic: _copies(link, topic) for topic in wanted} if side == "source" else {}
        for group, offsets in sorted(committed.items()):
            for topic in sorted({t for t, _ in offsets}):
                if side == "source":
                    sync = syncs.of_source(group, copies[topic])
                else:
                    sync = syncs.of_destination(group, topic)
                found.append(
                    {
                        "group": group,
                        "cluster": name,
                        "topic": topic,
                        "sync": sync.state,
                        "words": _words(link, sync, cluster_names),
                    }
                )
    return found, problems


def _copies(link: ClusterLink, topic: str) -> set[str]:
    """The topics on the link's destination a source topic's offsets are synced on: its
    mirror and its merge flows' destinations."""
    mirrors = link.mirrors.filter(source_topic=topic).values_list("mirror_topic", flat=True)
    flows = link.flows.filter(source_topic=topic).values_list("destination_topic", flat=True)
    return {*mirrors, *flows}


def _words(link: ClusterLink, sync: consumer_groups.GroupSync, names: tuple[str, str]) -> str:
    row = sync.row
    if sync.state == "COPY" and row is not None:
        return f"the synced copy of {row.group} on {names[0]}: {row.get_state_display()}"
    if row is not None:
        words = f"synced to {row.destination_group} on {names[1]}: {row.get_state_display()}"
        return words + (f" ({row.reason})" if row.reason else "")
    return {
        "OWN": f"its own group on {names[1]}: no offset sync writes it",
        "SYNC_OFF": f"not synced: consumer offset sync is off on link {link.name}",
        "SELECTED": f"selected by link {link.name}'s group filters; not synced yet",
        "NOT_SELECTED": f"not synced: link {link.name}'s group filters leave it out",
    }[sync.state]
