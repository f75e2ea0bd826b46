"""`active-active`: the seed's multi-datacenter demo (seed 003, Replicator's) with merge flows,
the source cluster as dc1 and the destination as dc2. `topic1` is written in both datacenters
and copied both ways into the same name; `topic2`, written in dc1, is copied to dc2 as
`topic2.replica`. Each side's `topic1` ends with every record of both sides exactly once, the
copied ones carrying their origin in the `isthmus.origin` header; `topic2.replica` equals
`topic2`. Then a consumer group that read part of `topic1` on dc1 moves to dc2 (its offsets
synced through the flows' checkpoints) and reads on there, skipping nothing, reading again at
most the bound the sync gave it."""

from __future__ import annotations

import contextlib
import json
from functools import partial

from infra.kafka_errors import KafkaAdminError
from infra.kafka_topics import TopicInfo
from replication.core import read_only
from replication.kafka.connections import cluster_admin
from replication.models import GroupOffsetSync, KafkaCluster
from replication.scenarios import clients
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.scenarios.share_data import (
    ON_DESTINATION,
    ON_SOURCE,
    create_link_with,
    delete_link_of,
)
from replication.topics import links, merge_flows
from spark_jobs import merging

RECORDS = 30  # written to topic1 on each side, and to topic2 on dc1
READ_FIRST = 40  # of topic1's 60 on dc1, by the group before it moves


def _names(tag: str) -> dict[str, str]:
    return {
        "topic": f"{tag}-topic1",
        "topic2": f"{tag}-topic2",
        "replica": f"{tag}-topic2.replica",
        "link": f"{tag}-dc-link",
        "group": f"{tag}-readers",
    }


def _written(side: str) -> list[bytes]:
    return [
        f'{{"userid": "User_{i % 10}", "dc": "{side}", "n": {i}}}'.encode() for i in range(RECORDS)
    ]


def _describe_topic(cluster: KafkaCluster, topic: str) -> TopicInfo:
    return cluster_admin(cluster).describe_topic(topic)


def create_topics(c: Context) -> str:
    for cluster, topics in ((c.source, ["topic", "topic2"]), (c.destination, ["topic"])):
        admin = cluster_admin(cluster)
        for key in topics:
            admin.create_topic(c.names[key], 1, None, {})
    for cluster in (c.source, c.destination):
        wait_for(
            partial(clients.quietly, partial(_describe_topic, cluster, c.names["topic"])),
            15,
            f"{c.names['topic']} on {cluster.name}",
            lambda: "no such topic",
        )
    return (
        f"{c.names['topic']} on {c.source.name} (dc1) and {c.destination.name} (dc2); "
        f"{c.names['topic2']} on {c.source.name}"
    )


def create_link(c: Context) -> str:
    made = create_link_with(c, {"link.mode": "BIDIRECTIONAL"})
    peer = links.peer_of(c.link)
    return f"{made}; its other half on {peer.destination.name} reads {c.destination.name}"


def flow_topic1_to_dc2(c: Context) -> str:
    flow = merge_flows.create_flow(c.actor, c.link, c.names["topic"])
    return f"flow {flow.name}: {flow.source_topic} into {flow.destination_topic} ({flow.mapping})"


def flow_topic2_renamed(c: Context) -> str:
    flow = merge_flows.create_flow(c.actor, c.link, c.names["topic2"], c.names["replica"])
    if not flow.created_topic:
        raise StepFailed(f"{c.names['replica']} made for the flow", "it existed already")
    return f"flow {flow.name}: {flow.source_topic} into {flow.destination_topic}, made for it"


def flow_topic1_to_dc1(c: Context) -> str:
    flow = merge_flows.create_flow(c.actor, links.peer_of(c.link), c.names["topic"])
    return f"flow {flow.name} on {c.source.name}: {flow.destination_topic} from dc2 into dc1"


def write_both(c: Context) -> str:
    writes = [
        (c.source, c.names["topic"], _written("dc1")),
        (c.destination, c.names["topic"], _written("dc2")),
        (c.source, c.names["topic2"], [f"registration {i}".encode() for i in range(RECORDS)]),
    ]
    for cluster, topic, values in writes:
        reports = clients.produce(clients.ordinary(cluster), topic, values)
        failed = [str(e) for e, _, _ in reports if e is not None]
        if failed or len(reports) != len(values):
            raise StepFailed(
                f"{len(values)} records written to {topic}", failed[0] if failed else "fewer"
            )
    return (
        f"{RECORDS} records to {c.names['topic']} in each datacenter, {RECORDS} to "
        f"{c.names['topic2']} in dc1"
    )


def each_once_on_both(c: Context) -> str:
    want = sorted(_written("dc1") + _written("dc2"))

    def sides() -> list[list[bytes]]:
        return [
            clients.read_from_start(clients.ordinary(cluster), c.names["topic"])
            for cluster in (c.source, c.destination)
        ]

    wait_for(
        lambda: all(sorted(found) == want for found in sides()),
        180,
        f"{2 * RECORDS} records in {c.names['topic']} on each side, each once",
        lambda: "{} on dc1, {} on dc2".format(*map(len, sides())),
    )
    return f"{c.names['topic']} holds the same {2 * RECORDS} records, each once, on both sides"


def provenance(c: Context) -> str:
    """As `kafka-console-consumer --property print.headers=true` shows them on dc2."""
    records = clients.read_partitions(clients.ordinary(c.destination), c.names["topic"], 1)
    dc1 = c.link.source_cluster_id
    copied = [h for _, _, value, h in records if b'"dc": "dc1"' in value]
    if len(copied) != RECORDS or any(merging.origin_of(h) != dc1 for h in copied):
        origins = sorted({str(merging.origin_of(h)) for h in copied})
        raise StepFailed(
            f"{RECORDS} dc1 records on dc2 with origin {dc1}",
            f"{len(copied)}, with origins {', '.join(origins)}",
        )
    local = [h for _, _, value, h in records if b'"dc": "dc2"' in value]
    if any(merging.origin_of(h) is not None for h in local):
        raise StepFailed("no origin header on dc2's own records", "some have one")
    header = dict(copied[0])[merging.ORIGIN].decode()
    return (
        f"dc1's records on dc2 carry isthmus.origin:{header} (cluster, topic, partition, "
        "offset, timestamp); dc2's own carry none"
    )


def replica_equals(c: Context) -> str:
    def both() -> tuple[list[bytes], list[bytes]]:
        return (
            clients.read_from_start(clients.ordinary(c.source), c.names["topic2"]),
            clients.read_from_start(clients.ordinary(c.destination), c.names["replica"]),
        )

    wait_for(
        lambda: (found := both())[0] == found[1] and len(found[0]) == RECORDS,
        120,
        f"{c.names['replica']} holding {c.names['topic2']}'s {RECORDS} records in order",
        lambda: "{} and {} records".format(*map(len, both())),
    )
    return f"{c.names['replica']} on dc2 holds {c.names['topic2']}'s {RECORDS} records, in order"


def sync_offsets(c: Context) -> str:
    group = {"name": c.names["group"], "patternType": "LITERAL", "filterType": "INCLUDE"}
    configs = {
        "consumer.offset.sync.enable": "true",
        "consumer.offset.sync.ms": "1000",
        "consumer.offset.group.filters": json.dumps({"groupFilters": [group]}),
    }
    links.alter_link_configs(c.actor, c.link, configs, [])
    return f"the link's half on dc2 syncs {c.names['group']}'s offsets every second"


def read_part_on_dc1(c: Context) -> str:
    read = clients.consume_as_group(
        c.source.connection_config(), c.names["topic"], c.names["group"], READ_FIRST, 1
    )
    if len(read) != READ_FIRST:
        raise StepFailed(f"{READ_FIRST} records read", f"{len(read)}")
    c.kept["read on dc1"] = [v.decode() for v in read]
    return f"read {READ_FIRST} of {2 * RECORDS} records on dc1, committed, consumer stopped"


def resume_on_dc2(c: Context) -> str:
    key = f"{c.names['topic']}/0"

    def synced() -> GroupOffsetSync | None:
        found = c.link.group_syncs.filter(group=c.names["group"]).first()
        ok = found is not None and found.state == GroupOffsetSync.State.IN_STEP
        return found if found is not None and ok and key in found.offsets else None

    row = wait_for(
        synced,
        90,
        f"{c.names['group']}'s offsets synced to dc2",
        lambda: str(c.link.group_syncs.filter(group=c.names["group"]).values("state").first()),
    )
    rest = clients.consume_as_group(
        c.destination.connection_config(), c.names["topic"], c.names["group"], None, 1
    )
    read, again = set(c.kept["read on dc1"]), [v.decode() for v in rest]
    every = {v.decode() for v in _written("dc1") + _written("dc2")}
    if read | set(again) != every:
        raise StepFailed("every record read on one side or the other", "some were skipped")
    repeated, bound = len([v for v in again if v in read]), row.may_repeat[key]
    if repeated > bound:
        raise StepFailed(
            f"at most {bound} records read again",
            f"{repeated} read again from offset {row.offsets[key]}",
        )
    return (
        f"moved to offset {row.offsets[key]} on dc2: read the {len(every) - len(read)} it had "
        f"not read, {repeated} again (the bound: {bound})"
    )


def cleanup(c: Context) -> list[str]:
    """The link (both halves: their flows go with them), then the run's topics."""
    left = delete_link_of(c)
    for cluster, keys in ((c.source, ["topic", "topic2"]), (c.destination, ["topic", "replica"])):
        admin = cluster_admin(cluster)
        with contextlib.suppress(KafkaAdminError):
            admin.delete_groups([c.names["group"]])
        for key in keys:
            try:
                with contextlib.suppress(KafkaAdminError):
                    admin.delete_topic(c.names[key])
                read_only.lift(admin, c.names[key])
            except Exception as exc:
                left.append(f"topic {c.names[key]} on {cluster.name}: {exc}")
    return left


ON_BOTH = f"(dc1: {ON_SOURCE}, dc2: {ON_DESTINATION})"

ACTIVE_ACTIVE = Scenario(
    name="active-active",
    title="Active-active across two datacenters",
    summary="Seed 003's multi-datacenter demo with merge flows: topic1 written in both "
    "datacenters and copied both ways, each record once on each side; topic2 copied as "
    "topic2.replica.",
    names=_names,
    cleanup=cleanup,
    steps=[
        Step(
            "Create the topics",
            "topic1 in both datacenters (dc1 is the source cluster, dc2 the destination), "
            "topic2 in dc1.",
            "kafka-topics --create --topic {topic} " + ON_BOTH,
            "the topics on both clusters",
            create_topics,
        ),
        Step(
            "Link the datacenters both ways",
            "A bidirectional link: a half on each cluster, each reading the other.",
            "kafka-cluster-links --create --link {link} --config link.mode=BIDIRECTIONAL "
            + ON_DESTINATION,
            "a link each way",
            create_link,
        ),
        Step(
            "Copy topic1 from dc1 to dc2",
            "A merge flow into dc2's own topic1, which dc2's producers write too.",
            "kafka-merge-flows --create --link {link} --source-topic {topic} " + ON_DESTINATION,
            "a flow into {topic} on dc2",
            flow_topic1_to_dc2,
        ),
        Step(
            "Copy topic2 to topic2.replica",
            "A rename, as Replicator's topic.rename.format does.",
            "kafka-merge-flows --create --link {link} --source-topic {topic2} "
            "--destination-topic {replica} " + ON_DESTINATION,
            "a flow into {replica}, made for it",
            flow_topic2_renamed,
        ),
        Step(
            "Copy topic1 from dc2 to dc1",
            "The other way, over the link's half on dc1. A record is never copied back to the "
            "cluster it came from, so nothing loops.",
            "kafka-merge-flows --create --link {link} --source-topic {topic} " + ON_SOURCE,
            "a flow into {topic} on dc1",
            flow_topic1_to_dc1,
        ),
        Step(
            "Write in both datacenters",
            "30 records to topic1 in each datacenter, 30 to topic2 in dc1.",
            "kafka-console-producer --topic {topic} " + ON_BOTH,
            "every record written",
            write_both,
        ),
        Step(
            "Each side holds every record once",
            "topic1 in each datacenter: its own 30 and the other's 30, none twice.",
            "kafka-console-consumer --topic {topic} --from-beginning " + ON_BOTH,
            "60 records on each side, each once",
            each_once_on_both,
        ),
        Step(
            "Read the provenance",
            "Each copied record carries where it was written first.",
            "kafka-console-consumer --topic {topic} --from-beginning --property "
            "print.headers=true " + ON_DESTINATION,
            "dc1's records with their origin, dc2's with none",
            provenance,
        ),
        Step(
            "topic2.replica equals topic2",
            "The renamed copy holds the same records in the same order.",
            "kafka-console-consumer --topic {replica} --from-beginning " + ON_DESTINATION,
            "the same 30 records",
            replica_equals,
        ),
        Step(
            "Sync consumer offsets to dc2",
            "The link's half on dc2 syncs the group's offsets, translated through the flows' "
            "checkpoints: merge flows keep no offsets.",
            "kafka-cluster-links --alter --link {link} --add-config "
            "consumer.offset.sync.enable=true,consumer.offset.sync.ms=1000 " + ON_DESTINATION,
            "offset sync on",
            sync_offsets,
        ),
        Step(
            "A group reads topic1 on dc1",
            "An application reads 40 of the 60 records, commits and stops.",
            "kafka-console-consumer --topic {topic} --group {group} --max-messages 40 " + ON_SOURCE,
            "40 records read and committed",
            read_part_on_dc1,
        ),
        Step(
            "The group moves to dc2",
            "It reads on from the offsets synced for it: nothing it had not read is skipped, "
            "and it reads again at most the bound the flow's page shows.",
            "kafka-console-consumer --topic {topic} --group {group} " + ON_DESTINATION,
            "the rest read on dc2, within the bound",
            resume_on_dc2,
        ),
    ],
)
