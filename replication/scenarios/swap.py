"""`swap`: the launch post's cloud burst (seed 004), on a bidirectional link: mirror a topic,
reverse it so the destination takes the writes, burst there, reverse back, and write on the
original side again. No record is copied twice and the offsets are the same on both clusters
throughout."""

from __future__ import annotations

from replication.cutover import reverse
from replication.kafka.connections import cluster_admin
from replication.models import MirrorTopic
from replication.scenarios import clients
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.scenarios.share_data import (
    ON_DESTINATION,
    ON_SOURCE,
    cleanup,
    create_link_with,
    create_mirror,
)
from replication.topics import links

BEFORE = [f"on-prem {i}".encode() for i in range(20)]
BURST = [f"cloud {i}".encode() for i in range(10)]
AFTER = [f"back {i}".encode() for i in range(5)]


def _names(tag: str) -> dict[str, str]:
    return {"topic": f"{tag}-orders", "link": f"{tag}-burst-link"}


def create_topic(c: Context) -> str:
    clients.create_topic(c.source, c.names["topic"])
    _write(c, c.source, BEFORE, 0)
    return f"topic {c.names['topic']} on {c.source.name} with {len(BEFORE)} records"


def _write(c: Context, cluster, values: list[bytes], first: int) -> None:
    reports = clients.produce(clients.ordinary(cluster), c.names["topic"], values)
    offsets = [o for e, _, o in reports if e is None]
    if offsets != list(range(first, first + len(values))):
        raise StepFailed(
            f"offsets {first} to {first + len(values) - 1} on {cluster.name}",
            f"{offsets} ({next((str(e) for e, _, _ in reports if e), 'no error')})",
        )


def create_link(c: Context) -> str:
    made = create_link_with(c, {"link.mode": "BIDIRECTIONAL", "metadata.max.age.ms": "5000"})
    peer = links.peer_of(c.link)
    return f"{made}; its other half on {peer.destination.name} reads {c.destination.name}"


def _in_step(c: Context, count: int) -> str:
    """Wait until both clusters hold the same `count` records, in the same order."""
    topic = c.names["topic"]

    def both() -> tuple[list[bytes], list[bytes]]:
        return (
            clients.read_from_start(clients.ordinary(c.source), topic),
            clients.read_from_start(clients.ordinary(c.destination), topic),
        )

    wait_for(
        lambda: (sides := both())[0] == sides[1] and len(sides[0]) == count,
        120,
        f"{count} records, the same at the same offsets on both clusters",
        lambda: "{} on the source, {} on the destination".format(*map(len, both())),
    )
    return f"both clusters hold the same {count} records at offsets 0 to {count - 1}"


def caught_up(c: Context) -> str:
    return _in_step(c, len(BEFORE))


def _reverse(c: Context, link, primary, mirror_side) -> str:
    ends_before = cluster_admin(mirror_side).end_offsets(c.names["topic"], 1)
    [outcome] = reverse.reverse_mirrors(
        c.actor, link, [c.names["topic"]], reverse.START, wait=True, note="swap scenario"
    )
    if outcome.error:
        raise StepFailed("the reverse to finish", outcome.error)
    ends_after = cluster_admin(mirror_side).end_offsets(c.names["topic"], 1)
    if ends_after != ends_before:
        raise StepFailed(f"nothing copied: {ends_before}", f"{ends_after}")
    refused = clients.produce(clients.ordinary(mirror_side), c.names["topic"], [b"refused"])
    if refused[0][0] is None:
        raise StepFailed(f"{mirror_side.name}'s topic read-only", "a write was taken")
    return (
        f"{c.names['topic']} on {primary.name} is writable; on {mirror_side.name} it mirrors "
        f"it from offset {ends_after[0]}, nothing copied"
    )


def reverse_there(c: Context) -> str:
    return _reverse(c, c.link, c.destination, c.source)


def burst(c: Context) -> str:
    _write(c, c.destination, BURST, len(BEFORE))
    return f"{len(BURST)} records written on {c.destination.name}"


def burst_copied(c: Context) -> str:
    return _in_step(c, len(BEFORE) + len(BURST))


def reverse_back(c: Context) -> str:
    peer = links.peer_of(c.link)
    return _reverse(c, peer, c.source, c.destination)


def write_back(c: Context) -> str:
    _write(c, c.source, AFTER, len(BEFORE) + len(BURST))
    return f"{len(AFTER)} records written on {c.source.name}"


def all_once(c: Context) -> str:
    seen = _in_step(c, len(BEFORE) + len(BURST) + len(AFTER))
    values = clients.read_from_start(clients.ordinary(c.source), c.names["topic"])
    if values != [*BEFORE, *BURST, *AFTER]:
        raise StepFailed("every record once, in the order written", f"{len(values)} records")
    mirror = MirrorTopic.objects.get(link=c.link, mirror_topic=c.names["topic"])
    return f"{seen}, each once; the mirror on {c.destination.name} is {mirror.state}"


SWAP = Scenario(
    name="swap",
    title="Swap and swap back (cloud burst)",
    summary="Seed 004's swap: reverse a mirror, burst on the other side, reverse back; "
    "nothing copied twice, offsets the same throughout.",
    names=_names,
    cleanup=cleanup,
    steps=[
        Step(
            "Create the topic and write to it",
            "A topic on the source (the on-premises side) with 20 records.",
            "kafka-topics --create --topic {topic} " + ON_SOURCE,
            "20 records at offsets 0 to 19",
            create_topic,
        ),
        Step(
            "Create the bidirectional link",
            "One link name, a half on each cluster, each reading the other.",
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link {link} "
            "--config link.mode=BIDIRECTIONAL,metadata.max.age.ms=5000",
            "a link each way",
            create_link,
        ),
        Step(
            "Mirror the topic",
            "A read-only mirror on the destination (the cloud side).",
            "kafka-mirrors --create --mirror-topic {topic} --link {link} " + ON_DESTINATION,
            "mirror topic {topic}, read-only",
            create_mirror,
        ),
        Step(
            "Wait until it has caught up",
            "The mirror holds the 20 records at the same offsets.",
            "kafka-replica-status --topics {topic} --include-mirror " + ON_DESTINATION,
            "the same 20 records on both",
            caught_up,
        ),
        Step(
            "Reverse it: the cloud takes the writes",
            "The source is fenced, the mirror becomes writable and the source a mirror of it; "
            "no record crosses.",
            "kafka-mirrors --reverse-and-start --topics {topic} --link {link} " + ON_DESTINATION,
            "swapped, nothing copied",
            reverse_there,
        ),
        Step(
            "Burst on the cloud side",
            "10 records written to the new primary.",
            "kafka-console-producer --topic {topic} " + ON_DESTINATION,
            "offsets 20 to 29",
            burst,
        ),
        Step(
            "Wait until the on-premises side has them",
            "The old source, now a mirror, copies the burst at the same offsets.",
            "kafka-replica-status --topics {topic} --include-mirror " + ON_SOURCE,
            "the same 30 records on both",
            burst_copied,
        ),
        Step(
            "Reverse back",
            "The on-premises topic takes the writes again; the cloud topic mirrors it.",
            "kafka-mirrors --reverse-and-start --topics {topic} --link {link} " + ON_SOURCE,
            "swapped back, nothing copied",
            reverse_back,
        ),
        Step(
            "Write on-premises again",
            "5 more records on the original primary.",
            "kafka-console-producer --topic {topic} " + ON_SOURCE,
            "offsets 30 to 34",
            write_back,
        ),
        Step(
            "Check every record is there once, at the same offset on both",
            "35 records on each cluster, in the order written, none twice.",
            "kafka-console-consumer --topic {topic} --from-beginning " + ON_DESTINATION,
            "35 records, each once, the same on both",
            all_once,
        ),
    ],
)
