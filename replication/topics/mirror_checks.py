"""Checking a request for mirror topics before anything is made: the request itself (names,
the link's state, the settings, the loop rule of active-active), then both clusters, each in one
request for all the topics (the source is still the link's and has the topics, the destination
does not and would take them: its dry run). What passes is a plan for each mirror, its unsaved
row and the configs its topic gets; `mirror_creation` makes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.kafka_topics import NewTopicSpec
from replication.core import filters, topic_configs
from replication.core.errors import ReplicationError, conflict, not_found
from replication.kafka.connections import destination_admin, source_admin, unreachable
from replication.models import CANARY_PREFIX, ClusterLink, MirrorTopic

TOPIC_NAME = re.compile(r"(?!\.{1,2}\Z)[a-zA-Z0-9._-]{1,249}")


@dataclass
class Request:
    """One creation: the link, each source topic's mirror name, the settings for all of them,
    and what is refused so far, by source topic."""

    link: ClusterLink
    names: dict[str, str]
    replication_factor: int | None
    overrides: dict[str, str]
    each_on_its_own: bool
    canary: bool = False  # a drill's canary (`CANARY_PREFIX`): the one mirror of such a name
    refused: dict[str, ReplicationError] = field(default_factory=dict)

    def target(self, topic: str) -> str:
        return f"mirror {self.names[topic]} on link {self.link.name}"

    def refuse(self, topics: list[str], error: ReplicationError) -> list[Plan]:
        for topic in topics:
            self.refused[topic] = error
        return []

    @property
    def undone(self) -> bool:
        """Whether the request as a whole is refused (all or none, and one refused)."""
        return bool(self.refused) and not self.each_on_its_own


@dataclass
class Plan:
    mirror: MirrorTopic
    configs: dict[str, str]


def checked_plans(request: Request, topics: list[str]) -> list[Plan]:
    """The unsaved mirrors and the configs they get, as both clusters say now (the source is
    the link's, has the topic, and the destination would take the mirror: its dry run)."""
    link, names, refused = request.link, request.names, request.refused
    asked = _requests(request, topics)
    if not asked:
        return []
    destination, source = destination_admin(link), source_admin(link)
    try:
        existing = destination.list_topic_names()
    except KafkaAdminError as exc:
        return request.refuse(asked, unreachable("destination", exc))
    try:
        _check_source_is_the_links(link, source)
    except ReplicationError as exc:
        return request.refuse(asked, exc)
    for topic in asked:
        if names[topic] in existing:
            refused[topic] = topic_exists(link, names[topic])
    asked = [t for t in asked if t not in refused]
    try:
        plans = _as_the_source_has_them(request, source, asked)
    except KafkaAdminError as exc:
        return request.refuse(asked, unreachable("source", exc))
    specs = [topic_spec(p, request.replication_factor) for p in plans]
    try:
        failed = destination.create_topics(specs, validate_only=True)
    except KafkaAdminError as exc:
        return request.refuse(asked, unreachable("destination", exc))
    for plan in plans:
        name, error = plan.mirror.mirror_topic, failed.get(plan.mirror.mirror_topic)
        if error is not None:
            refused[plan.mirror.source_topic] = (
                topic_exists(link, name)  # made since the look above
                if error.code == KafkaError.TOPIC_ALREADY_EXISTS
                else ReplicationError(
                    f"{link.destination.name} would refuse mirror topic {name!r}: {error}"
                )
            )
    return [p for p in plans if p.mirror.source_topic not in refused]


def _requests(request: Request, topics: list[str]) -> list[str]:
    """The topics whose request holds (each asked once), before any cluster is asked."""
    link = request.link
    back = mirrored_back(link)
    taken = dict(
        MirrorTopic.objects.filter(
            destination=link.destination, mirror_topic__in=request.names.values()
        )
        .select_related("link")
        .values_list("mirror_topic", "link__name")
    )
    seen: set[str] = set()
    for topic in topics:
        try:
            if topic in seen:
                raise ReplicationError(f"Source topic {topic!r} is named twice; name it once.")
            seen.add(topic)
            _check_request(request, topic, back, taken)
        except ReplicationError as exc:
            request.refused[topic] = exc
    return [t for t in dict.fromkeys(topics) if t not in request.refused]


def _as_the_source_has_them(request: Request, source: KafkaAdmin, topics: list[str]) -> list[Plan]:
    """A mirror of each topic with the source's partitions and the configs its classes call
    for; a topic the source lacks is refused."""
    link = request.link
    described = source.describe_topics(topics)
    source_configs = source.topics_configs([t for t in topics if t in described])
    plans = []
    for topic in topics:
        if topic not in described:
            request.refused[topic] = source_topic_missing(link, topic)
            continue
        wanted = topic_configs.desired(
            source_configs[topic], link.config("topic.config.sync.include"), request.overrides
        )
        mirror = MirrorTopic(
            link=link,
            destination=link.destination,
            source_topic=topic,
            mirror_topic=request.names[topic],
            source_topic_id=described[topic].topic_id,
            num_partitions=described[topic].partitions,
            config_overrides=request.overrides,
        )
        plans.append(Plan(mirror, wanted))
    return plans


def topic_spec(plan: Plan, replication_factor: int | None) -> NewTopicSpec:
    m = plan.mirror
    return NewTopicSpec(m.mirror_topic, m.num_partitions, replication_factor, plan.configs)


def _check_request(
    request: Request, source_topic: str, back: dict[str, str], taken: dict[str, str]
) -> None:
    """What can be refused before asking a cluster: names, the link's state, the settings."""
    link, name, replication_factor = (
        request.link,
        request.names[source_topic],
        request.replication_factor,
    )
    expected = link.prefix + source_topic
    if not TOPIC_NAME.fullmatch(source_topic):
        raise ReplicationError(
            f"Invalid source topic name {source_topic!r}: use 1-249 letters, digits, "
            "'.', '_' or '-'."
        )
    if name != expected:
        raise ReplicationError(
            f"A mirror topic is named after its source topic"
            f"{' with the link prefix ' + repr(link.prefix) if link.prefix else ''}: "
            f"expected {expected!r}, not {name!r}."
        )
    if len(name) > 249:
        raise ReplicationError(f"Mirror topic name {name!r} is longer than 249 characters.")
    if filters.internal_topic(source_topic):
        raise ReplicationError(
            f"{source_topic!r} is an internal topic (of Kafka, a schema registry, Confluent's "
            "services, MirrorMaker 2 or Isthmus), kept by each cluster for itself; it cannot "
            "be mirrored. Consumer offsets travel with consumer.offset.sync.enable, schemas "
            "with schema.sync.enable."
        )
    if source_topic.startswith(CANARY_PREFIX) and not request.canary:
        raise ReplicationError(
            f"Topic names starting {CANARY_PREFIX!r} are kept for the canary topics of DR "
            f"drills, which a drill deletes after: {source_topic!r} cannot be mirrored. Copy "
            "it to a topic of another name and mirror that. Nothing was changed."
        )
    if link.state == ClusterLink.State.FAILED:
        raise conflict(
            f"Cluster link {link.name!r} has FAILED ({link.error_message}); "
            "fix it before adding mirrors."
        )
    # Kafka's protocol carries it as a 16-bit number
    if replication_factor is not None and not 1 <= replication_factor <= 32767:
        raise ReplicationError("The replication factor must be a whole number from 1 to 32767.")
    topic_configs.check_overrides(request.overrides)
    if name in taken:
        raise conflict(
            f"Topic {name!r} is already a mirror topic of link {taken[name]!r} "
            f"on {link.destination.name}."
        )
    if source_topic in back:
        raise conflict(
            f"Source topic {source_topic!r} is {back[source_topic]}: mirroring it would copy "
            f"{link.destination.name}'s own records back to it. Read {link.destination.name}'s "
            "topic itself there. Nothing was changed."
        )


def mirrored_back(link: ClusterLink) -> dict[str, str]:
    """The topics on the link's source that are themselves mirrors fed from its destination
    (over any link the other way: a bidirectional link's other half, or a link of its own),
    each with the words that say so. Mirroring one over `link` would copy the destination's
    own records back to it, and with automatic mirrors both ways, again and again under ever
    longer names: the loop rule of active-active (docs/user-guide.md, "Active-active"). A
    promoted or failed over mirror (STOPPED) is an ordinary topic written on the source now,
    and may be mirrored.
    """
    found = MirrorTopic.objects.filter(
        destination__cluster_id=link.source_cluster_id,
        link__source_cluster_id=link.destination.cluster_id,
    ).exclude(state=MirrorTopic.State.STOPPED)
    return {
        m.mirror_topic: f"a mirror of {link.destination.name}'s topic {m.source_topic} over "
        f"link {m.link.name}"
        for m in found.select_related("link")
    }


def source_topic_missing(link: ClusterLink, topic: str) -> ReplicationError:
    return not_found(
        f"Source topic {topic!r} does not exist on the source cluster "
        f"{link.source_cluster_id}. Create it there first, or check the name."
    )


def _check_source_is_the_links(link: ClusterLink, source: KafkaAdmin) -> None:
    """The link's address must still reach the cluster the link was made for: a source
    rebuilt, or an address now pointing elsewhere, would mirror another cluster's topic."""
    try:
        answering = source.describe_cluster().cluster_id
    except KafkaAdminError as exc:
        raise unreachable("source", exc) from exc
    if answering != link.source_cluster_id:
        raise conflict(
            f"Link {link.name!r}'s source address now reaches cluster {answering}, not the "
            f"source it was made for ({link.source_cluster_id}); no mirror was created. Check "
            "the link's bootstrap.servers, or make a new link to the cluster that answers."
        )


def topic_exists(link: ClusterLink, name: str) -> ReplicationError:
    return conflict(
        f"Topic {name!r} already exists on {link.destination.name}. Delete it first "
        "(for example after a promote), or mirror into another cluster."
    )
