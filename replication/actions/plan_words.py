"""What each action that may need approval does, in words an approver can decide on: the
clusters by name and the direction, what becomes of each topic, which topics' producers and
consumer groups matter, and every object it names. Each action's function is its row's
`explain` in operations.OPERATIONS; plans.py puts the words beside the dry run's numbers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from replication.actions.asked import Asked
from replication.core.errors import ReplicationError
from replication.cutover import link_deletion
from replication.models import ApprovalRequest, ClusterLink, KafkaCluster
from replication.topics import links, merge_flows

Action = ApprovalRequest.Action
Side = Literal["source", "destination"]
# The topics whose producers and groups a plan reads, at most (a request takes 1,000).
WATCHED = 20


class Ref(TypedDict):
    """An object a plan names, for a link to its page: a cluster (by name), a link or mirror
    topic (on `cluster`, its destination) or a merge flow (of `link` on `cluster`)."""

    kind: Literal["cluster", "link", "mirror", "flow"]
    name: str
    cluster: str
    link: str


@dataclass(frozen=True)
class TopicOn:
    """A topic on one side of the asked link, and whether the lag sampler reads its end offsets
    (a mirror's source does, every 10 s)."""

    side: Side
    topic: str
    sampled: bool = False


@dataclass
class Explained:
    """An action in words, and what else its plan reads (producers, groups) and links."""

    summary: str
    effects: list[str] = field(default_factory=list)
    written: list[TopicOn] = field(default_factory=list)  # whose producers matter
    read: list[TopicOn] = field(default_factory=list)  # whose consumer groups matter
    objects: list[Ref] = field(default_factory=list)


def cluster_name(cluster_id: str) -> str:
    """A cluster's registered name, else its Kafka cluster id."""
    found = KafkaCluster.objects.filter(cluster_id=cluster_id).values_list("name", flat=True)
    return found.first() or cluster_id


def names(link: ClusterLink) -> tuple[str, str]:
    """(source, destination) cluster names of `link`."""
    return cluster_name(link.source_cluster_id), link.destination.name


def direction(link: ClusterLink) -> str:
    """'east → west, over link x', naming the other half of a bidirectional link."""
    source, destination = names(link)
    words = f"{source} → {destination}, over link {link.name}"
    if link.config("link.mode") == "BIDIRECTIONAL":
        words += (
            f" (one half of a bidirectional link: its other half copies {destination} → {source})"
        )
    return words


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:5])
    return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def _link_refs(link: ClusterLink) -> list[Ref]:
    refs: list[Ref] = [
        {"kind": "link", "name": link.name, "cluster": link.destination.name, "link": link.name}
    ]
    for cluster in KafkaCluster.objects.filter(
        cluster_id__in=[link.source_cluster_id, link.destination.cluster_id]
    ).order_by("name"):
        refs.append({"kind": "cluster", "name": cluster.name, "cluster": cluster.name, "link": ""})
    return refs


def _mirror_ref(link: ClusterLink, topic: str) -> Ref:
    return {"kind": "mirror", "name": topic, "cluster": link.destination.name, "link": link.name}


def _mirrors(asked: Asked) -> dict[str, str]:
    """The named mirror topics' source topics (a name that is no mirror is left out)."""
    found = asked.link.mirrors.filter(mirror_topic__in=asked.topics[:WATCHED])
    return dict(found.values_list("mirror_topic", "source_topic"))


def _on_mirrors(
    asked: Asked,
    sources: dict[str, str],
    total: int,
    summary: str,
    effect: Callable[[str, str], str],
) -> Explained:
    """An action on `total` mirror topics, the first WATCHED of them in `sources` (mirror topic
    -> source topic): each one's fate, its source's producers, the groups of both, and the
    link, clusters and mirrors named."""
    more = total - len(sources)
    return Explained(
        summary,
        [
            *(effect(m, s) for m, s in sources.items()),
            *([f"And so for the {more} other mirror topics named."] if more > 0 else []),
        ],
        [TopicOn("source", s, sampled=True) for s in sources.values()],
        [
            *(TopicOn("source", s, sampled=True) for s in sources.values()),
            *(TopicOn("destination", m) for m in sources),
        ],
        [*_link_refs(asked.link), *(_mirror_ref(asked.link, m) for m in sources)],
    )


def _stop_words(asked: Asked, how: str) -> Explained:
    source, destination = names(asked.link)
    sources = _mirrors(asked)
    verb = "Fail over" if asked.action == Action.FAILOVER else "Promote"
    stops, becomes = ("it stops", "becomes") if len(asked.topics) == 1 else ("they stop", "become")
    return _on_mirrors(
        asked,
        sources,
        len(asked.topics),
        f"{verb} {_listed(asked.topics)} on {destination}: {stops} mirroring {source} over "
        f"link {asked.link.name} and {becomes} writable on {destination}.",
        lambda m, s: (
            f"{m} on {destination} stops mirroring {s} on {source} {how}, and becomes an "
            f"ordinary writable topic: its producers then write to {destination}."
        ),
    )


def promote_words(asked: Asked) -> Explained:
    return _stop_words(asked, "once it has copied all its source holds")


def failover_words(asked: Asked) -> Explained:
    return _stop_words(
        asked, "at once, whatever it has not copied yet (the lag below stays behind on the source)"
    )


def reverse_words(asked: Asked) -> Explained:
    source, destination = names(asked.link)
    sources = _mirrors(asked)
    started = (
        "its copy starts at once"
        if asked.action == Action.REVERSE_AND_START
        else "its copy is left paused"
    )
    return _on_mirrors(
        asked,
        sources,
        len(asked.topics),
        f"Reverse {_listed(asked.topics)}: {destination} becomes the primary and {source} its "
        f"mirror, over the other half of link {asked.link.name} ({destination} → {source}).",
        lambda m, s: (
            f"{m} on {destination} becomes writable (the primary), and {s} on {source} becomes "
            f"its mirror: read-only, copying from {m} on {destination}; {started}."
        ),
    )


def restore_words(asked: Asked) -> Explained:
    # The link is the half into the old primary; its source holds the promoted topics.
    primary, old = names(asked.link)
    topics = asked.topics[:WATCHED]
    refs = _link_refs(asked.link)
    try:
        peer = links.peer_of(asked.link)
    except ReplicationError:
        peer = None
    if peer is not None:
        refs += [
            _mirror_ref(peer, t)
            for t in peer.mirrors.filter(mirror_topic__in=topics).values_list(
                "mirror_topic", flat=True
            )
        ]
    each = "it" if len(asked.topics) == 1 else "each"
    return Explained(
        f"Fail back {_listed(asked.topics)} on {old}: truncate {each} "
        f"where it and the promoted topic on {primary} last agree, set the records after that "
        f"aside, and make it a mirror of the topic on {primary} over link {asked.link.name} "
        f"({primary} → {old}).",
        [
            f"{t} on {old} is truncated per partition to the offset below; the records past it "
            f"are set aside in a quarantine topic on {old} (nothing is deleted unseen); then "
            f"{t} on {old} becomes a read-only mirror of {t} on {primary}, copying across only "
            f"what {primary} took since the failover."
            for t in topics
        ],
        # Producers still writing the old primary would have their records set aside.
        [TopicOn("destination", t) for t in topics],
        [*(TopicOn("destination", t) for t in topics), *(TopicOn("source", t) for t in topics)],
        refs,
    )


def delete_link_words(asked: Asked) -> Explained:
    """A bidirectional link is deleted whole (link_deletion): both halves are named, and what
    forcing fails over on each; producers and groups are read for the named half's mirrors."""
    source, destination = names(asked.link)
    found = link_deletion.deletion(asked.link)
    what = f"link {asked.link.name} ({source} → {destination})"
    if found.bidirectional:
        what = f"link {asked.link.name}, both halves ({source} → {destination} and back)"
    gone = f" {found.other_half_gone}" if found.other_half_gone else ""
    live = sum(len(n) for n in found.live.values())
    if not asked.force:
        return Explained(
            f"Delete {what}. It is refused while there are mirror topics"
            f"{f' ({live} now)' if live else ''}; no topic is touched.{gone}",
            objects=_link_refs(asked.link),
        )
    others = [
        f"{name} on {half.destination.name} stops mirroring at once, whatever it has not copied "
        "yet, and becomes an ordinary writable topic."
        for half in found.halves[1:]
        for name in found.live[half.pk][:WATCHED]
    ]
    mine = found.live[asked.link.pk]
    named = asked.link.mirrors.filter(mirror_topic__in=mine[:WATCHED])
    sources = dict(named.values_list("mirror_topic", "source_topic"))
    explained = _on_mirrors(
        asked,
        sources,
        len(mine),
        f"Fail over the {live} mirror topic{'s' if live != 1 else ''} of {what}, then delete "
        f"it.{gone}",
        lambda m, s: (
            f"{m} on {destination} stops mirroring {s} on {source} at once, whatever it has not "
            "copied yet, and becomes an ordinary writable topic."
        ),
    )
    explained.effects += others
    return explained


def _flow_ref(link: ClusterLink, name: str) -> Ref:
    return {"kind": "flow", "name": name, "cluster": link.destination.name, "link": link.name}


def create_flow_words(asked: Asked) -> Explained:
    source, destination = names(asked.link)
    p = asked.params
    mapping = (
        f"partitions mapped {p['mapping']}"
        if p.get("mapping")
        else "its partition mapping chosen when it starts"
    )
    return Explained(
        f"Create merge flow {p['flow']}: copy {p['source_topic']} on {source} into "
        f"{p['destination_topic']} on {destination} ({source} → {destination}, over link "
        f"{asked.link.name}).",
        [
            f"Records written to {p['source_topic']} on {source} start arriving in "
            f"{p['destination_topic']} on {destination}, beside what is written there, with new "
            f"offsets; {mapping}. Its consumers on {destination} read them.",
        ],
        [TopicOn("source", p["source_topic"])],
        [TopicOn("source", p["source_topic"]), TopicOn("destination", p["destination_topic"])],
        _link_refs(asked.link),
    )


def delete_flow_words(asked: Asked) -> Explained:
    source, destination = names(asked.link)
    name = asked.params["flow"]
    try:
        flow = merge_flows.get_flow(asked.link, name)
    except ReplicationError:
        return Explained(
            f"Delete merge flow {name} of link {asked.link.name}: it is gone already.",
            objects=_link_refs(asked.link),
        )
    return Explained(
        f"Delete merge flow {name}: stop copying {flow.source_topic} on {source} into "
        f"{flow.destination_topic} on {destination} ({source} → {destination}, over link "
        f"{asked.link.name}).",
        [
            f"No more records of {flow.source_topic} on {source} arrive in "
            f"{flow.destination_topic} on {destination}; {flow.destination_topic} keeps what it "
            "holds, and its own producers go on writing it.",
        ],
        [TopicOn("source", flow.source_topic)],
        [TopicOn("source", flow.source_topic), TopicOn("destination", flow.destination_topic)],
        [*_link_refs(asked.link), _flow_ref(asked.link, name)],
    )


def promote_subjects_words(asked: Asked) -> Explained:
    source, destination = names(asked.link)
    subjects = asked.params["subjects"]
    return Explained(
        f"Make schema subjects {_listed(subjects)} writable on {destination}'s schema registry "
        f"({source} → {destination}, over link {asked.link.name}).",
        [
            f"The subjects stop being synced from {source}'s registry; producers on "
            f"{destination} may then register new versions of them there."
        ],
        objects=_link_refs(asked.link),
    )
