"""`share-data`: seed 000's tutorial ("Share data across topics"), step for step, with names of
its own: a topic `demo` on the source and three messages, a link with metadata.max.age.ms=5000,
the mirror, its replica status caught up, producing to it refused by the broker, a config and
new partitions following the source, the mirror listed on the link, promote, STOPPED, and the
two topics diverging once each is written on its own."""

from __future__ import annotations

import contextlib

from confluent_kafka import KafkaError

from infra.kafka_errors import KafkaAdminError
from replication.core import read_only
from replication.cutover import link_deletion, promote
from replication.kafka.connections import cluster_admin
from replication.models import ClusterLink, MirrorTopic
from replication.observe import lag
from replication.scenarios import clients
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.topics import link_creation, mirrors

MESSAGES = [b"first", b"second", b"third"]
RETENTION = "123456890"
ON_SOURCE, ON_DESTINATION = "--bootstrap-server localhost:9092", "--bootstrap-server localhost:9093"


def _names(tag: str) -> dict[str, str]:
    return {"topic": f"{tag}-demo", "link": f"{tag}-demo-link"}


def create_topic(c: Context) -> str:
    info = clients.create_topic(c.source, c.names["topic"])
    return f"topic {info.name} on {c.source.name}: {info.partitions} partition, id {info.topic_id}"


def produce_three(c: Context) -> str:
    reports = clients.produce(c.source.connection_config(), c.names["topic"], MESSAGES)
    if [(e, o) for e, _, o in reports] != [(None, 0), (None, 1), (None, 2)]:
        raise StepFailed("first, second and third at offsets 0, 1, 2", str(reports))
    return "first, second and third written at offsets 0, 1 and 2 of partition 0"


def consume_three(c: Context) -> str:
    values = clients.read_from_start(c.source.connection_config(), c.names["topic"])
    if values != MESSAGES:
        raise StepFailed("first, second, third", ", ".join(v.decode() for v in values))
    return "read back: first, second, third"


def create_link(c: Context) -> str:
    return create_link_with(c, {"metadata.max.age.ms": "5000"})


def create_link_with(c: Context, configs: dict[str, str]) -> str:
    """The run's link from the source cluster, over its registered connection."""
    c.made = link_creation.create_link(
        c.actor, c.destination, c.names["link"], configs, source=c.source
    )
    cluster_id = cluster_admin(c.source).describe_cluster().cluster_id
    if c.link.source_cluster_id != cluster_id:
        raise StepFailed(f"a link to cluster {cluster_id}", c.link.source_cluster_id)
    return f"link {c.link.name} from cluster {cluster_id}, {c.link.state}"


def create_mirror(c: Context) -> str:
    mirror = mirrors.create_mirror(c.actor, c.link, c.names["topic"])
    admin = cluster_admin(c.destination)
    info = admin.describe_topic(mirror.mirror_topic)
    if not read_only.complete(admin, mirror.mirror_topic):
        raise StepFailed("the mirror's read-only ACLs", "some are missing")
    return (
        f"mirror topic {info.name} on {c.destination.name}: {info.partitions} partition, read-only"
    )


def caught_up(c: Context) -> str:
    topic = c.names["topic"]
    source, destination = cluster_admin(c.source), cluster_admin(c.destination)

    def ends() -> tuple[int, int]:
        return source.end_offsets(topic, 1)[0], destination.end_offsets(topic, 1)[0]

    wait_for(
        lambda: ends() == (3, 3),
        120,
        "the mirror's end at 3, as the source's",
        lambda: "source end {}, mirror end {}".format(*ends()),
    )
    status = lag.describe_mirror(_mirror(c))
    return f"partition 0: source end 3, mirror end 3, lag {status.partitions[0].lag}"


def produce_refused(c: Context) -> str:
    [(error, _, _)] = clients.produce(
        clients.ordinary(c.destination), c.names["topic"], [b"not allowed"]
    )
    if error is None or error.code() != KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise StepFailed("TOPIC_AUTHORIZATION_FAILED from the broker", str(error or "accepted"))
    return f"the broker refused it: {error.name()} ({error.str()})"


def config_follows(c: Context) -> str:
    topic = c.names["topic"]
    cluster_admin(c.source).alter_topic_configs(topic, {"retention.ms": RETENTION}, [])
    destination = cluster_admin(c.destination)

    def retention() -> str | None:
        value = destination.topic_configs(topic).get("retention.ms")
        return value.value if value and value.is_set else None

    wait_for(
        lambda: retention() == RETENTION,
        60,
        f"retention.ms={RETENTION} on the mirror",
        lambda: f"retention.ms={retention() or 'not set'}",
    )
    return f"the mirror has retention.ms={RETENTION}"


def partitions_follow(c: Context) -> str:
    topic = c.names["topic"]
    cluster_admin(c.source).create_partitions(topic, 8)
    destination = cluster_admin(c.destination)
    wait_for(
        lambda: destination.describe_topic(topic).partitions == 8,
        60,
        "8 partitions on the mirror",
        lambda: f"{destination.describe_topic(topic).partitions} partitions",
    )
    return "the mirror has 8 partitions, as the source"


def listed(c: Context) -> str:
    names = [m.mirror_topic for m in mirrors.list_mirrors(link=c.link)]
    if c.names["topic"] not in names:
        raise StepFailed(f"{c.names['topic']} among the link's mirrors", ", ".join(names) or "none")
    return f"link {c.link.name} mirrors {', '.join(names)}"


def promote_mirror(c: Context) -> str:
    [outcome] = promote.stop_mirrors(
        c.actor,
        c.link,
        [c.names["topic"]],
        promote.PROMOTE,
        wait=True,
        note="share-data scenario",
    )
    if outcome.error:
        raise StepFailed("the promote to finish", outcome.error)
    return "promoted: its stream stopped writing it and its read-only ACLs were lifted"


def stopped(c: Context) -> str:
    mirror = _mirror(c)
    ends = cluster_admin(c.destination).end_offsets(c.names["topic"], 8)
    if mirror.state != MirrorTopic.State.STOPPED:
        raise StepFailed("STOPPED", mirror.state)
    if read_only.present(cluster_admin(c.destination), mirror.mirror_topic):
        raise StepFailed("no read-only ACLs left", "some are still there")
    shown = {int(p): o for p, o in (mirror.stop_offsets or {}).items()}
    if shown != ends:
        raise StepFailed(f"stopped at the topic's ends {ends}", str(shown))
    return f"STOPPED at offsets {ends}"


def diverge_writes(c: Context) -> str:
    topic = c.names["topic"]
    [(old, _, _)] = clients.produce(clients.ordinary(c.source), topic, [b"old"])
    [(new, _, _)] = clients.produce(clients.ordinary(c.destination), topic, [b"new"])
    if old is not None or new is not None:
        raise StepFailed(
            "both written", f"source: {old or 'written'}, destination: {new or 'written'}"
        )
    return "old written to the source, new to the promoted topic"


def diverged(c: Context) -> str:
    source = clients.read_from_start(clients.ordinary(c.source), c.names["topic"])
    destination = clients.read_from_start(clients.ordinary(c.destination), c.names["topic"])
    if source != [*MESSAGES, b"old"] or destination != [*MESSAGES, b"new"]:
        raise StepFailed(
            "first, second, third, old on the source and first, second, third, new on the "
            "destination",
            f"{b', '.join(source).decode()} and {b', '.join(destination).decode()}",
        )
    return "source: first, second, third, old; destination: first, second, third, new"


def _mirror(c: Context) -> MirrorTopic:
    return MirrorTopic.objects.get(destination=c.destination, mirror_topic=c.names["topic"])


def delete_link_of(c: Context) -> list[str]:
    """Delete the run's link (both halves of a bidirectional one: deleting either deletes
    both), failing its mirrors over; returns what could not be removed."""
    link = ClusterLink.objects.filter(
        name=c.names["link"], destination__in=[c.destination, c.source]
    ).first()
    if link is None:
        return []
    try:
        link_deletion.delete_link(c.actor, link, force=True)
    except Exception as exc:  # (say it, and go on with the rest)
        return [f"link {link.name}: {exc}"]
    return []


def cleanup(c: Context) -> list[str]:
    """Remove the run's link and topics; returns what could not be removed."""
    left = delete_link_of(c)
    for cluster in (c.source, c.destination):
        try:
            admin = cluster_admin(cluster)
            with contextlib.suppress(KafkaAdminError):
                admin.delete_topic(c.names["topic"])
            read_only.lift(admin, c.names["topic"])
            if "group" in c.names:
                admin.delete_groups([c.names["group"]])
        except Exception as exc:
            left.append(f"topic {c.names['topic']} on {cluster.name}: {exc}")
    return left


def _step(title, explanation, cli, expected, run) -> Step:
    return Step(title, explanation, cli, expected, run)


SHARE_DATA = Scenario(
    name="share-data",
    title="Share data across clusters",
    summary="Seed 000, step for step: mirror a topic, watch it follow its source, promote it.",
    names=_names,
    cleanup=cleanup,
    steps=[
        _step(
            "Create the topic on the source",
            "A topic with one partition on the source cluster, as in the tutorial.",
            "kafka-topics --create --topic {topic} " + ON_SOURCE,
            "topic {topic} on the source",
            create_topic,
        ),
        _step(
            "Produce three messages",
            "first, second and third, written to the source topic.",
            "kafka-console-producer --topic {topic} " + ON_SOURCE,
            "offsets 0, 1 and 2",
            produce_three,
        ),
        _step(
            "Consume them",
            "Read the topic from the beginning, as kafka-console-consumer does.",
            "kafka-console-consumer --topic {topic} --from-beginning " + ON_SOURCE,
            "first, second, third",
            consume_three,
        ),
        _step(
            "Create the cluster link",
            "A link on the destination that reads from the source; it refreshes the source's "
            "metadata every 5 s, so new partitions show up quickly.",
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link {link} "
            "--config bootstrap.servers=localhost:9092,metadata.max.age.ms=5000",
            "a link to the source cluster",
            create_link,
        ),
        _step(
            "Create the mirror topic",
            "A read-only copy of the topic on the destination, same partitions and offsets.",
            "kafka-mirrors --create --mirror-topic {topic} --link {link} " + ON_DESTINATION,
            "mirror topic {topic}, read-only",
            create_mirror,
        ),
        _step(
            "Check the replica status",
            "The mirror has caught up: its end offset is the source's.",
            "kafka-replica-status --topics {topic} --include-mirror " + ON_DESTINATION,
            "lag 0",
            caught_up,
        ),
        _step(
            "Try to produce to the mirror",
            "A mirror is read-only: the destination broker itself refuses the write.",
            "kafka-console-producer --topic {topic} " + ON_DESTINATION,
            "TOPIC_AUTHORIZATION_FAILED",
            produce_refused,
        ),
        _step(
            "Change a config on the source",
            "retention.ms set on the source topic reaches the mirror within the config sync "
            "interval.",
            "kafka-configs --alter --topic {topic} --add-config retention.ms=123456890 "
            + ON_SOURCE,
            "retention.ms=123456890 on the mirror",
            config_follows,
        ),
        _step(
            "Add partitions on the source",
            "The source grows to 8 partitions; the mirror follows within metadata.max.age.ms.",
            "kafka-topics --alter --topic {topic} --partitions 8 " + ON_SOURCE,
            "8 partitions on the mirror",
            partitions_follow,
        ),
        _step(
            "List the link's mirror topics",
            "The link shows the mirror it keeps.",
            "kafka-cluster-links --list --link {link} --include-topics " + ON_DESTINATION,
            "{topic} on link {link}",
            listed,
        ),
        _step(
            "Promote the mirror",
            "The stream stops writing the mirror, then its read-only ACLs are lifted: it is a "
            "topic of the destination's own from now on.",
            "kafka-mirrors --promote --topics {topic} " + ON_DESTINATION,
            "the promote finished",
            promote_mirror,
        ),
        _step(
            "Check that it stopped",
            "The mirror is STOPPED at the offsets it had copied, and writable.",
            "kafka-mirrors --describe --topics {topic} --pending-stopped-only " + ON_DESTINATION,
            "STOPPED",
            stopped,
        ),
        _step(
            "Write to each cluster",
            "old to the source topic, new to the promoted topic: they no longer share data.",
            "kafka-console-producer --topic {topic} " + ON_SOURCE + " (old); "
            "kafka-console-producer --topic {topic} " + ON_DESTINATION + " (new)",
            "both written",
            diverge_writes,
        ),
        _step(
            "Read both topics",
            "Two consumers show the divergence: old only on the source, new only on the "
            "destination.",
            "kafka-console-consumer --topic {topic} --from-beginning " + ON_SOURCE + "; "
            "kafka-console-consumer --topic {topic} --from-beginning " + ON_DESTINATION,
            "old on the source only, new on the destination only",
            diverged,
        ),
    ],
)
