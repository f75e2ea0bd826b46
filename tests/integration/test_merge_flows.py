"""Merge flows on the real clusters, copied by the real engine: a rename with provenance on
every record, one topic copied both ways between two clusters into the same name for a minute
with each record exactly once on each side (the loop rule), an aggregate of two source topics
into one, a consumer group moved across an active-active pair through the flows' checkpoints,
and a pasted Replicator configuration made into its flows.

Records are checked one by one: key, value, headers (the source's, then the origin header),
timestamp, and the partition the mapping gives; read with `read_committed`, as consumers of a
flow's topic should.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.actions import replicator_import
from replication.core.errors import ReplicationError
from replication.engine import supervise
from replication.models import ClusterLink, GroupOffsetSync
from replication.observe import history, lag
from replication.overview import metrics
from replication.topics import flow_offsets, merge_flows, offset_sync
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from spark_jobs import merging
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import (
    RECENT,
    commit_offsets,
    keep_producing,
    ordinary,
    patient_admins,
    write_numbered,
)
from tests.mirror_checks import ACTOR, eventually, read_all

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def copied(links: list, node: kafka.KafkaNode, topic: str, count: int, timeout: float = 240):
    """Supervise the links as the beat does until `topic` on `node` holds `count` committed
    records; then its records."""
    found = []

    def done() -> bool:
        for link in links:
            supervise.supervise(link)
        found[:] = read_all(node.bootstrap, topic)
        return len(found) >= count

    eventually(done, timeout, f"{count} records in {topic} on {node.name}")
    return found


def origin(record) -> str:
    return dict(record.headers)[merging.ORIGIN].decode()


def test_a_rename_copies_every_record_with_its_origin(
    make_link, make_topic, topic_name, registered_clusters, client_as
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    write_numbered(ordinary(kafka.SOURCE), topic_name, 0, 100)
    link = make_link()
    flow = merge_flows.create_flow(ACTOR, link, topic_name, f"{topic_name}.replica")
    assert (flow.name, flow.mapping, flow.created_topic) == (
        f"{link.name}.{topic_name}",
        "one-to-one",
        True,
    )
    records = copied([link], kafka.DESTINATION, f"{topic_name}.replica", 100)
    source = read_all(kafka.SOURCE.bootstrap, topic_name)
    cluster = registered_clusters["source"].cluster_id
    assert len(records) == 100
    by_key = {r.key: r for r in records}
    for want in source:
        got = by_key[want.key]
        assert (got.partition, got.value, got.timestamp) == (
            want.partition,
            want.value,
            want.timestamp,
        )
        assert got.headers == [
            *want.headers,
            (
                merging.ORIGIN,
                f"{cluster},{topic_name},{want.partition},{want.offset},{want.timestamp[1]}".encode(),
            ),
        ]

    def reported() -> bool:  # the engine's next beat says so
        status = merge_flows.status(flow)
        return (status.records, status.skipped, status.lag) == (100, 0, 0)

    eventually(reported, 30, "the flow reporting 100 records copied and no lag")
    shown = metrics.prometheus_text()
    ids = f'flow="{flow.name}",link="{link.name}",destination="destination"'
    assert f"isthmus_flow_records_copied{{{ids}}} 100" in shown
    assert f'isthmus_flow_partition_lag{{{ids},partition="0"}} 0' in shown

    # Its page charts what the beat sampled: lag, records per second, latency (a beat that
    # finds no report of the flow, its slot reporting anew, leaves a gap: sampled again).
    def sampled() -> bool:
        lag.sample_all()
        return bool(history.flow_series(flow)["lag"])

    eventually(sampled, 30, "a sample of the flow's lag")
    url = reverse("flow-detail", args=["destination", link.name, flow.name])
    page = client_as("viewer").get(url).content.decode()
    for title in ("Lag", "Copied", "Latency"):
        figure = page.split(f'data-chart="{title}"')[1].split("</figure>")[0]
        assert "no samples" not in figure, title
    assert 'id="records">100 records' in page
    # The same flow twice, a flow into a mirror, a mapping the counts do not allow: refused.
    with pytest.raises(ReplicationError, match="copies .* into .* already"):
        merge_flows.create_flow(ACTOR, link, topic_name, f"{topic_name}.replica", name="again")
    mirror = create_mirror(ACTOR, link, topic_name)
    with pytest.raises(ReplicationError, match="read-only") as into_mirror:
        merge_flows.create_flow(ACTOR, link, topic_name, mirror.mirror_topic, name="m")
    assert into_mirror.value.status == 409
    make_topic(kafka.DESTINATION, f"{topic_name}.three", partitions=3)
    with pytest.raises(ReplicationError, match="map one to one only between equal counts"):
        merge_flows.create_flow(
            ACTOR, link, topic_name, f"{topic_name}.three", mapping="one-to-one"
        )


def test_one_topic_copied_both_ways_holds_each_record_once_on_each_side(
    bidirectional, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    make_topic(kafka.DESTINATION, topic_name, partitions=2)
    into_destination = bidirectional()
    into_source = peer_of(into_destination)
    for link in (into_destination, into_source):
        merge_flows.create_flow(ACTOR, link, topic_name)
    links = [into_destination, into_source]

    # Both sides write for a while (20 s) while both flows run.
    writers = [
        # Idempotent: a broker stalled past the request timeout (60 s once, on a loaded
        # machine) makes a plain producer send some records twice.
        threading.Thread(target=keep_producing, args=(topic_name, 3000, 2, 20, True), daemon=True),
        threading.Thread(
            target=write_numbered,
            args=(ordinary(kafka.DESTINATION), topic_name, 100_000, 3000),
            daemon=True,
        ),
    ]
    for writer in writers:
        writer.start()
    writers[0].join(120)
    writers[1].join(120)
    for node in (kafka.SOURCE, kafka.DESTINATION):
        records = copied(links, node, topic_name, 6000)
        keys = Counter(r.key for r in records)
        assert len(records) == 6000 and set(keys.values()) == {1}, node.name
    # Still so once the flows have gone on a while: nothing came back.
    for link in links:
        supervise.supervise(link)
    for node in (kafka.SOURCE, kafka.DESTINATION):
        assert len(read_all(node.bootstrap, topic_name)) == 6000

    # Each flow says what it did: the other side's 3,000 copied, its own 3,000 left out.
    def reported() -> bool:
        found = [merge_flows.status(link.flows.get()) for link in links]
        return all((s.records, s.skipped) == (3000, 3000) for s in found)

    eventually(reported, 30, "both flows reporting 3,000 copied and 3,000 left out")


def test_a_group_moved_across_an_active_active_pair_skips_nothing_within_its_bound(
    bidirectional, make_topic, topic_name, client_as, typed
):
    for node in (kafka.SOURCE, kafka.DESTINATION):
        make_topic(node, topic_name, partitions=2)
    group = f"{topic_name}-readers"
    groups = {"name": group, "patternType": "LITERAL", "filterType": "INCLUDE"}
    into_destination = bidirectional(
        **{
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": json.dumps({"groupFilters": [groups]}),
        }
    )
    into_source = peer_of(into_destination)
    forward = merge_flows.create_flow(ACTOR, into_destination, topic_name)
    back = merge_flows.create_flow(ACTOR, into_source, topic_name)
    assert flow_offsets.rule(forward).back == back and flow_offsets.rule(back).back == forward

    # Both sides write in rounds; the beat's samples keep checkpoints between them.
    for n in range(3):
        write_numbered(ordinary(kafka.SOURCE), topic_name, n * 1000, 40)
        write_numbered(ordinary(kafka.DESTINATION), topic_name, 100_000 + n * 1000, 40)
        for node in (kafka.SOURCE, kafka.DESTINATION):
            copied([into_destination, into_source], node, topic_name, 80 * (n + 1))

        def reported(total=80 * (n + 1)) -> bool:
            found = [merge_flows.status(f) for f in (forward, back)]
            return all(s.records + s.skipped == total for s in found)

        eventually(reported, 30, "both flows reporting every record")
        lag.sample_all()
    assert forward.checkpoints.count() >= 3 and back.checkpoints.count() >= 3

    # A group on the source read partition 0 to the middle of the second round, partition 1
    # to the middle of the third: between checkpoints, so it may read some records again.
    on_source = read_all(kafka.SOURCE.bootstrap, topic_name)
    places = {
        p: [r.offset for r in on_source if r.partition == p][i] for p, i in ((0, 46), (1, 95))
    }
    commit_offsets(kafka.SOURCE, group, {(topic_name, p): c for p, c in places.items()})
    outcome = offset_sync.sync_offsets(
        into_destination, timezone.now(), *patient_admins(into_destination)
    )
    assert outcome.groups == {group: GroupOffsetSync.State.IN_STEP}
    row = into_destination.group_syncs.get(group=group)

    # On the destination it reads on from there: nothing it had not read lies before, and
    # what it reads again is within the bound it was given.
    on_destination = read_all(kafka.DESTINATION.bootstrap, topic_name)
    for p in (0, 1):
        key = f"{topic_name}/{p}"
        moved_to = row.offsets[key]
        read = {r.value for r in on_source if r.partition == p and r.offset < places[p]}
        before = [r.value for r in on_destination if r.partition == p and r.offset < moved_to]
        after = [r.value for r in on_destination if r.partition == p and r.offset >= moved_to]
        assert set(before) <= read, p
        again = [v for v in after if v in read]
        assert 0 < len(again) <= row.may_repeat[key], (p, len(again), row.may_repeat[key])
        assert len(before) + len(after) == 120  # the partition's records, each once
    held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group])[group]
    assert {p: o for (_, p), o in held.items()} == {
        p: row.offsets[f"{topic_name}/{p}"] for p in (0, 1)
    }

    # The way back does not sync the group's place it was given back to the source.
    into_source.refresh_from_db()
    offset_sync.sync_offsets(into_source, timezone.now(), *patient_admins(into_source))
    on_source_now = KafkaAdmin(admin_config(kafka.SOURCE)).group_offsets([group])[group]
    assert {p: o for (_, p), o in on_source_now.items()} == places

    # The flow's page and kafka-merge-flows show the group and its bound.
    bound = sum(row.may_repeat.values())
    url = reverse("flow-detail", args=["destination", into_destination.name, forward.name])
    page = client_as("viewer").get(url).content.decode()
    table = page.split('id="flow-groups"')[1].split("</table>")[0]
    assert group in table and f"{bound} record" in table and back.name in page
    at = f"--bootstrap-server {kafka.DESTINATION.bootstrap} --link {into_destination.name}"
    shown = typed(f"kafka-merge-flows {at} --describe --flow {forward.name}", role="viewer")
    assert f"\tGroup: {group}\tDestinationGroup: {group}\tState: IN_STEP\t" in shown.stdout
    assert f"\tMayRepeat: {bound}" in shown.stdout
    for node in kafka.NODES:
        leftovers.delete_groups(node, [group])


def test_two_source_topics_aggregate_into_one(make_link, make_topic, topic_name, typed):
    east, west = f"{topic_name}.east", f"{topic_name}.west"
    make_topic(kafka.SOURCE, east, partitions=2)
    make_topic(kafka.SOURCE, west, partitions=4)
    write_numbered(ordinary(kafka.SOURCE), east, 0, 40)
    producer_timestamps = {str(i).encode(): RECENT + i for i in range(40)}
    write_numbered(ordinary(kafka.SOURCE), west, 1000, 30)
    link = make_link()
    into = f"{topic_name}.all"
    flows = [
        merge_flows.create_flow(ACTOR, link, east, into),  # makes it, with 2 partitions
        merge_flows.create_flow(ACTOR, link, west, into),
    ]
    assert [f.mapping for f in flows] == ["one-to-one", "by-key"]
    records = copied([link], kafka.DESTINATION, into, 70)
    assert len(records) == 70
    origins = Counter(origin(r).split(",")[1] for r in records)
    assert origins == {east: 40, west: 30}
    for r in records:
        if origin(r).split(",")[1] == east:
            assert r.partition == int(r.key) % 2 and r.timestamp[1] == producer_timestamps[r.key]

    # kafka-merge-flows says the same, each flow with its mapping and that offsets are not kept.
    at = f"--bootstrap-server {kafka.DESTINATION.bootstrap} --link {link.name}"
    listed = typed(f"kafka-merge-flows {at} --list", role="viewer")
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if line.startswith("Flow: ")]
    assert [line.split("\t")[0] for line in lines] == [f"Flow: {f.name}" for f in flows]
    assert f"SourceTopic: {west}\tDestinationTopic: {into}\tMapping: by-key" in lines[1]
    assert all("OffsetsPreserved: false" in line for line in lines)

    def described() -> str:
        found = typed(f"kafka-merge-flows {at} --describe --flow {flows[0].name}", role="viewer")
        return found.stdout if "Copied: 40\t" in found.stdout else ""

    shown = eventually(described, 30, "the flow described with its 40 records")
    assert "\tPartition: 0\tNextSourceOffset: 20\tSourceEndOffset: 20\tLag: 0" in shown
    # A place in one source topic is no place in the aggregate: its groups are not synced.
    assert "\tConsumerOffsets: not synced: " in shown and "is an aggregate" in shown


def test_a_replicator_configuration_becomes_its_flows(
    make_link, make_topic, topic_name, registered_clusters
):
    topic = make_topic(kafka.SOURCE, topic_name, partitions=2)
    make_topic(kafka.SOURCE, f"{topic_name}-skipped")
    write_numbered(ordinary(kafka.SOURCE), topic, 0, 20)
    link = make_link()
    # Its flows are made at once (where the policy asks an approver, each is a request: the
    # role matrix proves that).
    ClusterLink.objects.filter(pk=link.pk).update(approvals_required=0)
    destination = registered_clusters["destination"]
    pasted = json.dumps(
        {
            "name": "replicator-dc1-to-dc2-topic2",
            "config": {
                "connector.class": "io.confluent.connect.replicator.ReplicatorSourceConnector",
                "topic.regex": f"{topic_name}.*",
                "topic.blacklist": f"{topic_name}-skipped",
                "topic.rename.format": "${topic}.replica",
                "provenance.header.enable": "false",
                "src.kafka.bootstrap.servers": kafka.SOURCE.bootstrap,
                "dest.kafka.bootstrap.servers": destination.bootstrap_servers,
                "src.consumer.group.id": "replicator",
            },
        }
    )
    plan = replicator_import.plan(destination, pasted)
    assert (plan.link, plan.flows, plan.existing) == (link, [(topic, f"{topic}.replica")], [])
    assert any("always carry each record's origin" in n for n in plan.notes)
    assert any("src.consumer.group.id" in n for n in plan.notes)
    assert not link.flows.exists()  # a plan makes nothing

    _, made = replicator_import.create(ACTOR, destination, pasted)
    flow = made[topic, f"{topic}.replica"]
    assert flow.name == f"replicator-dc1-to-dc2-topic2.{topic}"
    assert len(copied([link], kafka.DESTINATION, f"{topic}.replica", 20)) == 20
    # Imported again: nothing new, the flow said to exist.
    again, made = replicator_import.create(ACTOR, destination, pasted)
    assert (again.existing, made) == ([f"{topic} into {topic}.replica"], {})
    with pytest.raises(ReplicationError, match="No link into destination reads from"):
        replicator_import.plan(
            destination, pasted.replace(kafka.SOURCE.bootstrap, "elsewhere:9092")
        )


def test_a_flows_progress_is_read_whole_while_others_write_its_partition(
    registered_clusters,
):
    """A copy (re)starting reads its progress to the end as a committed reader sees it, while
    another flow (or another part) commits transaction after transaction on the same partition
    of the progress topic: it must not wait for a moment when nobody writes. And what it
    committed after another's transaction opened is read too: the end it reads to is the high
    watermark, not the last stable offset a committed query answers (which once restarted a
    part a batch behind, copying that batch twice)."""
    from confluent_kafka import Producer

    from replication.kafka.connections import cluster_admin

    merge_flows.ensure_progress_topic(cluster_admin(registered_clusters["destination"]))
    ours, busy = "flow-under-test", "busy-neighbour"
    config = admin_config(kafka.DESTINATION)  # the topic is written only by links

    def transactional(flow: str) -> Producer:
        producer = Producer({**config, "transactional.id": f"test-{flow}-{topic_suffix}"})
        producer.init_transactions(30)
        return producer

    topic_suffix = leftovers.unique_name("p")
    ours += topic_suffix
    while merging.progress_partition(busy) != merging.progress_partition(ours):
        busy += "x"
    where = merging.progress_partition(ours)
    mine = transactional(ours)
    mine.begin_transaction()
    mine.produce(
        merging.PROGRESS_TOPIC,
        json.dumps({"next": 42, "checkpoint": [42, 45]}).encode(),
        merging.progress_key(ours, 3),
        where,
    )
    mine.commit_transaction(30)

    stop = threading.Event()

    def keep_committing() -> None:
        neighbour = transactional(busy)
        n = 0
        while not stop.is_set():
            neighbour.begin_transaction()
            neighbour.produce(
                merging.PROGRESS_TOPIC, b'{"next": 1}', merging.progress_key(busy, n), where
            )
            neighbour.commit_transaction(30)
            n += 1

    writer = threading.Thread(target=keep_committing, daemon=True)
    writer.start()
    try:
        time.sleep(1)  # the neighbour's transactions under way
        began = time.monotonic()
        found = merging.read_progress(config, ours, timeout=20)
        took = time.monotonic() - began
    finally:
        stop.set()
        writer.join(10)
    assert found == {3: {"next": 42, "checkpoint": [42, 45]}}
    assert took < 10, took

    neighbour = transactional(busy)  # a transaction left open ...
    neighbour.begin_transaction()
    neighbour.produce(merging.PROGRESS_TOPIC, b'{"next": 1}', merging.progress_key(busy, 0), where)
    neighbour.flush(10)
    mine.begin_transaction()  # ... before ours commits
    mine.produce(
        merging.PROGRESS_TOPIC,
        json.dumps({"next": 50}).encode(),
        merging.progress_key(ours, 3),
        where,
    )
    mine.commit_transaction(30)
    closing = threading.Timer(1.0, neighbour.commit_transaction, (30,))
    closing.start()
    try:
        assert merging.read_progress(config, ours, timeout=20) == {3: {"next": 50}}
    finally:
        closing.join()
