"""`dr-round-trip`: the way there and back after losing the source cluster. A mirror with a
consumer group reading; the source cluster stops; fail over and the group goes on at the
destination, which takes new writes; the source comes back holding records the mirror never
got; truncate-and-restore sets those aside in a quarantine topic and makes the old primary a
mirror of the promoted topic, copying only what it lacks; reverse back, and the group returns
to the source. Across the whole trip the group reads every record once."""

from __future__ import annotations

from replication.cutover import restore, reverse
from replication.kafka.connections import cluster_admin
from replication.models import MirrorTopic
from replication.scenarios import clients
from replication.scenarios.moves import (
    CREATE_AND_FILL,
    FAIL_OVER,
    LOSE_SOURCE,
    MIRROR_CAUGHT_UP,
    OFFSETS_SYNCED,
    PARTITIONS,
    READ_PART,
    RECORDS,
    START_SOURCE,
    _names,
    group_filters,
    recovering,
)
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.scenarios.share_data import ON_DESTINATION, ON_SOURCE, cleanup, create_link_with
from replication.topics import links

WRITTEN_THERE = [f"dc2-{i}".encode() for i in range(20)]
NEVER_MIRRORED = [f"stray-{i}".encode() for i in range(10)]
WRITTEN_BACK = [f"back-{i}".encode() for i in range(10)]


def link_both_ways(c: Context) -> str:
    made = create_link_with(
        c,
        {
            "link.mode": "BIDIRECTIONAL",
            "metadata.max.age.ms": "5000",
            "consumer.offset.sync.enable": "true",
            "consumer.offset.sync.ms": "1000",
            "consumer.offset.group.filters": group_filters(("*", "INCLUDE")),
        },
    )
    peer = links.peer_of(c.link)
    return f"{made}; its other half on {peer.destination.name} syncs offsets back"


def _read(c: Context, cluster, wanted: list[bytes]) -> str:
    """The group reads everything new for it on `cluster`: exactly `wanted`, in any order."""
    got = clients.consume_as_group(
        clients.ordinary(cluster), c.names["topic"], c.names["group"], None, PARTITIONS
    )
    if sorted(got) != sorted(wanted):
        raise StepFailed(
            f"{len(wanted)} records, the ones not read yet",
            f"{len(got)}: {sorted(set(got) - set(wanted))[:3] or 'some missing'}",
        )
    read = c.kept.setdefault("read", list(c.kept["read on the source"]))
    read.extend(v.decode() for v in got)
    return f"read {len(got)} records on {cluster.name}, none skipped, none twice"


def resume_there(c: Context) -> str:
    done = set(c.kept["read on the source"])
    rest = [f"{i}".encode() for i in range(RECORDS) if f"{i}" not in done]
    return _read(c, c.destination, rest)


def _write(c: Context, cluster, values: list[bytes]) -> str:
    reports = clients.produce(clients.ordinary(cluster), c.names["topic"], values, PARTITIONS)
    errors = [str(e) for e, _, _ in reports if e is not None]
    if errors or len(reports) != len(values):
        raise StepFailed(f"{len(values)} records written", errors[0] if errors else "fewer")
    return f"{len(values)} records written to {c.names['topic']} on {cluster.name}"


def write_there(c: Context) -> str:
    return _write(c, c.destination, WRITTEN_THERE)


def read_there(c: Context) -> str:
    return _read(c, c.destination, WRITTEN_THERE)


def write_stray(c: Context) -> str:
    return _write(c, c.source, NEVER_MIRRORED) + ", which the mirror never got"


def truncate_and_restore(c: Context) -> str:
    peer = links.peer_of(c.link)
    [outcome] = restore.truncate_and_restore(
        c.actor, peer, [c.names["topic"]], wait=True, note="dr-round-trip scenario"
    )
    if outcome.error:
        raise StepFailed("the restore to finish", outcome.error)
    if outcome.messages_truncated != len(NEVER_MIRRORED):
        raise StepFailed(f"{len(NEVER_MIRRORED)} records truncated", outcome.messages_truncated)
    held = clients.read_partitions(clients.ordinary(c.source), outcome.quarantine, PARTITIONS)
    if sorted(r[2] for r in held) != sorted(NEVER_MIRRORED):
        raise StepFailed(
            f"exactly the {len(NEVER_MIRRORED)} records the mirror never got in quarantine",
            f"{len(held)} records",
        )
    if any(dict(r[3]).get("isthmus.origin.offset") is None for r in held):
        raise StepFailed("each quarantined record saying where it was", "one without")
    points = {p["partition_id"]: p["offset_truncated_to"] for p in outcome.partitions}
    return (
        f"truncated to {points}; the {outcome.messages_truncated} records the mirror never got "
        f"are in {outcome.quarantine}, with their old partition and offset"
    )


def _both(c: Context) -> tuple[list, list]:
    """Each cluster's (partition, offset, value) of every record of the topic."""
    source, destination = (
        [r[:3] for r in clients.read_partitions(clients.ordinary(x), c.names["topic"], PARTITIONS)]
        for x in (c.source, c.destination)
    )
    return source, destination


def _same_on_both(c: Context, count: int) -> str:
    wait_for(
        lambda: (sides := _both(c))[0] == sides[1] and len(sides[0]) == count,
        120,
        f"the same {count} records at the same offsets on both clusters",
        lambda: "{} on the source, {} on the destination".format(*map(len, _both(c))),
    )
    return f"both clusters hold the same {count} records at the same partitions and offsets"


def restored(c: Context) -> str:
    seen = _same_on_both(c, RECORDS + len(WRITTEN_THERE))
    mirror = MirrorTopic.objects.get(link=links.peer_of(c.link), mirror_topic=c.names["topic"])
    report = mirror.stop_report or {}
    kept, copied = report.get("records_kept", {}), report.get("records_to_copy", {})
    if sum(copied.values()) != len(WRITTEN_THERE):
        raise StepFailed(f"only the {len(WRITTEN_THERE)} new records copied across", copied)
    return (
        f"{seen}; {sum(kept.values())} records kept on {c.source.name}, only "
        f"{sum(copied.values())} copied from {c.destination.name}"
    )


def offsets_back(c: Context) -> str:
    group, topic = c.names["group"], c.names["topic"]

    def on(cluster) -> dict:
        offsets = cluster_admin(cluster).group_offsets([group]).get(group, {})
        return {p: o for (t, p), o in offsets.items() if t == topic}

    wait_for(
        lambda: (there := on(c.destination)) and on(c.source) == there,
        60,
        "the group's offsets on the source, as on the destination",
        lambda: f"source {on(c.source)}, destination {on(c.destination)}",
    )
    return f"the source holds the group's offsets {on(c.source)}, synced back"


def reverse_back(c: Context) -> str:
    topic = c.names["topic"]
    before = cluster_admin(c.destination).end_offsets(topic, PARTITIONS)
    [outcome] = reverse.reverse_mirrors(
        c.actor, links.peer_of(c.link), [topic], reverse.START, wait=True, note="dr-round-trip"
    )
    if outcome.error:
        raise StepFailed("the reverse to finish", outcome.error)
    after = cluster_admin(c.destination).end_offsets(topic, PARTITIONS)
    if after != before:
        raise StepFailed(f"nothing copied: {before}", str(after))
    return f"{topic} on {c.source.name} takes the writes again; {c.destination.name} mirrors it"


def write_back(c: Context) -> str:
    return _write(c, c.source, WRITTEN_BACK)


def read_back(c: Context) -> str:
    _read(c, c.source, WRITTEN_BACK)
    read = c.kept["read"]
    wanted = [f"{i}" for i in range(RECORDS)] + [
        v.decode() for v in [*WRITTEN_THERE, *WRITTEN_BACK]
    ]
    if sorted(read) != sorted(wanted):
        raise StepFailed(
            f"every one of the {len(wanted)} records read once",
            f"{len(read)} reads, {len(set(read))} distinct",
        )
    _same_on_both(c, len(wanted))
    return (
        f"the group read all {len(wanted)} records once across the round trip, none of the "
        f"{len(NEVER_MIRRORED)} set aside; the destination mirrors the source again"
    )


def _clean_up(c: Context) -> list[str]:
    """Both halves, the topics and the group, as swap cleans up; then the quarantine."""
    left = cleanup(c)
    try:
        admin = cluster_admin(c.source)
        for name in admin.list_topic_names():
            if name.startswith(f"{c.names['topic']}."):
                admin.delete_topic(name)
    except Exception as exc:  # (say it: an admin removes the quarantine by hand)
        left.append(f"the quarantine of {c.names['topic']} on {c.source.name}: {exc}")
    return left


DR_ROUND_TRIP = Scenario(
    name="dr-round-trip",
    title="Fail over and come back (DR round trip)",
    summary="Lose the source, fail over, then truncate-and-restore the old primary and reverse "
    "back; the group reads every record once.",
    names=_names,
    cleanup=recovering(_clean_up),
    steps=[
        CREATE_AND_FILL,
        Step(
            "Create a bidirectional link that syncs consumer offsets",
            "One link name, a half on each cluster; each half syncs every group's offsets.",
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link {link} "
            "--config link.mode=BIDIRECTIONAL,consumer.offset.sync.enable=true "
            "--consumer-group-filters-json-file groups.json",
            "a link each way",
            link_both_ways,
        ),
        MIRROR_CAUGHT_UP,
        READ_PART,
        OFFSETS_SYNCED,
        LOSE_SOURCE,
        FAIL_OVER,
        Step(
            "Resume the group on the destination",
            "It reads from its synced offsets: nothing skipped, nothing read twice.",
            "kafka-console-consumer --topic {topic} --group {group} " + ON_DESTINATION,
            "the other 40 records",
            resume_there,
        ),
        Step(
            "Write on the new primary",
            "Producers moved to the destination write 20 records.",
            "kafka-console-producer --topic {topic} " + ON_DESTINATION,
            "20 records written",
            write_there,
        ),
        Step(
            "The group reads them",
            "The group on the destination reads the 20 new records.",
            "kafka-console-consumer --topic {topic} --group {group} " + ON_DESTINATION,
            "20 records",
            read_there,
        ),
        START_SOURCE,
        Step(
            "A producer that was never moved writes to the old primary",
            "10 records land on the source that the mirror never got: the records an "
            "unplanned failover leaves behind.",
            "kafka-console-producer --topic {topic} " + ON_SOURCE,
            "10 records written",
            write_stray,
        ),
        Step(
            "Truncate and restore the old primary",
            "Its records past the failover point go to a quarantine topic; it is made a "
            "mirror of the promoted topic at the failover point.",
            "kafka-mirrors --truncate-and-restore --topics {topic} --link {link} " + ON_SOURCE,
            "10 records quarantined",
            truncate_and_restore,
        ),
        Step(
            "Wait until it holds the promoted topic",
            "Only the records the promoted topic took after the failover are copied.",
            "kafka-replica-status --topics {topic} --include-mirror " + ON_SOURCE,
            "the same 120 records on both, 20 copied",
            restored,
        ),
        Step(
            "Wait for the group's offsets on the source",
            "The link's other half syncs the group's offsets back.",
            "kafka-consumer-groups --describe --group {group} " + ON_SOURCE,
            "the same offsets on the source",
            offsets_back,
        ),
        Step(
            "Reverse back",
            "The source takes the writes again; the destination mirrors it. No record crosses.",
            "kafka-mirrors --reverse-and-start --topics {topic} --link {link} " + ON_SOURCE,
            "swapped back, nothing copied",
            reverse_back,
        ),
        Step(
            "Write on the source again",
            "Producers moved back write 10 records.",
            "kafka-console-producer --topic {topic} " + ON_SOURCE,
            "10 records written",
            write_back,
        ),
        Step(
            "The group moves back and reads the rest",
            "On the source, from its synced offsets: every record of the round trip read once.",
            "kafka-console-consumer --topic {topic} --group {group} " + ON_SOURCE,
            "130 records read once in all",
            read_back,
        ),
    ],
    stops_source=True,
)
