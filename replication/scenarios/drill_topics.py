"""The topics a drill makes, and their removal. A drill touches only what it made: each topic
named as its canary (the canary, its mirror, a restore's holding and quarantine topics) is
recorded by its topic id as it appears (`record`), and the clean up deletes a topic of such a
name only while it has a recorded id. A topic of such a name the drill did not make (a user's,
made on the cluster itself) refuses the drill (`strangers`) and is never deleted."""

from __future__ import annotations

import contextlib

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from replication.core import read_only
from replication.cutover import restore
from replication.kafka.connections import cluster_admin
from replication.models import KafkaCluster, MadeTopic, MirrorTopic
from replication.scenarios.drill_steps import Drill
from replication.scenarios.runner import StepFailed, wait_for
from replication.topics import mirrors


def _places(d: Drill) -> list[tuple[KafkaCluster, str]]:
    """Each cluster the drill makes topics on, and the canary's name there."""
    return [(d.source, d.canary), (d.link.destination, d.mirror_topic)]


def _named(admin: KafkaAdmin, name: str) -> dict[str, str]:
    """The topics on the cluster named as the canary `name`, by name: their topic ids."""
    names = [t for t in admin.list_topic_names() if of_canary(t, name)]
    return {t: info.topic_id for t, info in admin.describe_topics(names).items()}


def record(d: Drill) -> None:
    """Add each topic named as the canary that appeared since the last look (the drill's step
    made it: `strangers` refused the drill if one stood before) to what the drill made."""
    for cluster, name in _places(d):
        known = {(m["topic"], m["topic_id"]) for m in d.made}
        for topic, topic_id in _named(cluster_admin(cluster), name).items():
            if (topic, topic_id) not in known:
                d.made.append(MadeTopic(cluster=cluster.cluster_id, topic=topic, topic_id=topic_id))


def strangers(d: Drill) -> str:
    """Why the drill may not start: topics named as its canary that no drill made ("" if none)."""
    ours = {m["topic_id"] for m in d.made}
    found = [
        f"{topic} on {cluster.name}"
        for cluster, name in _places(d)
        for topic, topic_id in sorted(_named(cluster_admin(cluster), name).items())
        if topic_id not in ours
    ]
    if not found:
        return ""
    return (
        f"Topic {', '.join(found)} is named as this link's drill canary, but no drill made it: "
        "the drill deletes its canary after, so it does not start while another topic has "
        "that name. Rename that topic (copy it to another name, then delete it), then drill."
    )


def clean_up(d: Drill) -> list[str]:
    """Remove what the drill made (`d.made`, left with what could not be removed): its mirrors
    on both halves of the link, its topics on both clusters, any read-only ACLs left. Returns
    what is left, in words."""
    left: list[str] = []
    clusters = {c.cluster_id: c for c, _ in _places(d)}
    halves = [d.link, *([d.peer] if d.peer is not None else [])]
    made = {(m["cluster"], m["topic"]): m["topic_id"] for m in d.made}
    rows = MirrorTopic.objects.filter(link__in=halves, mirror_topic__in={t for _, t in made})
    for mirror in rows.select_related("link", "destination"):
        recorded = made.get((mirror.destination.cluster_id, mirror.mirror_topic))
        try:  # (the row of a topic the drill made, or of one gone)
            if _topic_id(mirror.destination, mirror.mirror_topic) in (recorded, None):
                mirrors.delete_mirror(d.actor, mirror)
            else:
                left.append(
                    f"mirror {mirror.mirror_topic} on link {mirror.link.name}: its topic is "
                    "another than the drill made; delete it yourself if it is no one's"
                )
        except Exception as exc:  # (say it, and go on with the topics)
            left.append(f"mirror {mirror.mirror_topic} on link {mirror.link.name}: {exc}")
    kept: list[MadeTopic] = []
    for cluster_id, cluster in clusters.items():
        ours = [m for m in d.made if m["cluster"] == cluster_id]
        if not ours:
            continue
        try:
            _remove_topics(cluster, ours)
        except (KafkaAdminError, StepFailed) as exc:
            left.append(f"topics {', '.join(m['topic'] for m in ours)} on {cluster.name}: {exc}")
            kept += ours
    d.made = kept
    return left


def _topic_id(cluster: KafkaCluster, name: str) -> str | None:
    try:
        return cluster_admin(cluster).describe_topic(name).topic_id
    except TopicNotFound:
        return None


def _remove_topics(cluster: KafkaCluster, made: list[MadeTopic]) -> None:
    """Delete each topic the drill made on the cluster that still has the id it had then, and
    lift its read-only ACLs (and those of one already gone; never another topic's)."""
    admin = cluster_admin(cluster)
    names = {m["topic"] for m in made}
    found = admin.describe_topics(names & admin.list_topic_names())
    standing = {topic: info.topic_id for topic, info in found.items()}
    ours = {m["topic"] for m in made if standing.get(m["topic"]) == m["topic_id"]}
    for topic in ours:
        with contextlib.suppress(TopicNotFound):
            admin.delete_topic(topic)
    read_only.lift_all(admin, names - set(standing) | ours)
    wait_for(
        lambda: not set(admin.list_topic_names()) & ours,
        30,
        f"{', '.join(sorted(ours))} gone from {cluster.name}",
        lambda: "still listed",
    )


def of_canary(topic: str, name: str) -> bool:
    """The canary itself, or what a truncate-and-restore of it left (its holding topic, its
    quarantine, stamped with 14 digits)."""
    quarantine = restore.QUARANTINE.format(topic=name, stamp="")
    return topic in (name, restore.HOLDING.format(topic=name)) or (
        topic.startswith(quarantine)
        and len(topic) == len(quarantine) + 14
        and topic[len(quarantine) :].isdigit()
    )
