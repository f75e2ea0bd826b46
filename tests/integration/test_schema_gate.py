"""No record before its schema, and promote taking the subjects along, on the real clusters,
registries and engine: a record naming a schema id the destination's registry lacks waits (and
the mirror says so) while the rest copies; the sync brings the id at once and the record lands
after it; a conflicting id holds its partition until resolved; a promoted topic's subjects
become writable on the destination and are synced no more, and after a reverse the old
source's subjects are kept in IMPORT mode by the link's other half.

The registries are shared with other tests: a test that has a producer register on the
destination does it in a schema context of its own, whose ids come from a sequence of its own.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

import pytest
from django.urls import reverse as url_of
from django.utils import timezone

from devstack import kafka, registry
from infra.registry_http import SchemaRegistryError
from infra.schema_registry import SchemaRegistry, SchemaVersion
from replication.cutover import promote, restore, reverse
from replication.engine import supervise
from replication.models import AuditEvent, ClusterLink, SchemaSubjectSync
from replication.observe.lag import describe_mirror
from replication.overview import metrics
from replication.sync import syncers
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from tests.kafka_clients import produce
from tests.mirror_checks import ACTOR, assert_exact_copy, eventually, read_all, run_until_copied
from tests.registries import DESTINATION, SOURCE, optional_ints, unique_name

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

RECENT = int(time.time() * 1000) - 600_000
HOUR_MS = "3600000"  # no whole sync run during a test: only what records wait for is synced


def framed(schema_id: int, payload: bytes) -> bytes:
    """A record's bytes in Confluent's wire format: a zero byte, the schema id, the payload."""
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def beat(link: ClusterLink) -> None:
    """One round of what the beat does for the link: supervise its stream, run due syncers."""
    supervise.supervise(link)
    link.refresh_from_db()
    syncers.sync_link(link, timezone.now())


def copied_over(link: ClusterLink, bootstrap: str, topic: str, count: int):
    """A check for `eventually`: the beat runs once for the link, and `topic` at `bootstrap`
    holds `count` records."""

    def check() -> bool:
        beat(link)
        return len(read_all(bootstrap, topic)) == count

    return check


def waits(mirror) -> list[str]:
    supervise.supervise(mirror.link)
    return describe_mirror(mirror).schema_waits


def test_a_record_waits_for_its_new_schema_says_so_and_lands_only_after_it(
    make_link, make_topic, topic_name, client_as
):
    topic = make_topic(kafka.SOURCE, topic_name, 2)
    link = make_link({"schema.sync.enable": "true", "schema.sync.ms": HOUR_MS})
    ClusterLink.objects.filter(pk=link.pk).update(schemas_synced_at=timezone.now())
    mirror = create_mirror(ACTOR, link, topic)
    run_until_copied(link, [mirror])

    # A producer registers a new schema and writes with it at once; records with no schema
    # (and bytes that only look framed) go to the other partition.
    schema_id = SOURCE.register(
        SchemaVersion(f"{topic}-value", 0, 0, optional_ints(topic, "V", "a")), keep_id=False
    )
    records = [
        {
            "key": f"k{i}".encode(),
            "value": framed(schema_id, f"payload-{i}".encode()),
            "partition": 0,
            "timestamp": RECENT + i,
            "headers": [("n", str(i).encode())],
        }
        for i in range(20)
    ]
    records += [
        {"key": None, "value": f"plain-{i}".encode(), "partition": 1, "timestamp": RECENT + i}
        for i in range(10)
    ]
    records.append({"value": framed(2**31 - 7, b"not a registry's"), "partition": 1})
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, topic, records)

    # Nothing syncs yet (the beat's syncers do not run): partition 0 holds at its first
    # record, and the mirror says why; partition 1 copies.
    said = eventually(lambda: waits(mirror), 60, "the mirror saying it waits for a schema")
    assert said == [
        f"Partition 0 holds at source offset 0 until the destination's schema registry has "
        f"schema id {schema_id} (not in the destination's registry yet). The schema sync "
        "brings it within seconds; a conflict waits until it is resolved on the destination's "
        "registry."
    ]
    eventually(
        lambda: len(read_all(kafka.DESTINATION.bootstrap, topic)) == 11,
        60,
        "partition 1 copied",
    )
    assert {r.partition for r in read_all(kafka.DESTINATION.bootstrap, topic)} == {1}
    with pytest.raises(SchemaRegistryError):
        DESTINATION.schema(schema_id)
    page = client_as("viewer").get(url_of("mirror-detail", args=["destination", topic]))
    assert "waiting for a schema" in page.content.decode()
    assert (
        "isthmus_mirror_partition_schema_wait_seconds"
        f'{{link="{link.name}",destination="destination",mirror="{topic}",partition="0"}}'
    ) in metrics.prometheus_text()

    # The beat's syncer sees the wait and syncs that schema at once (its interval is an hour).
    def copied() -> bool:
        beat(link)
        return len(read_all(kafka.DESTINATION.bootstrap, topic)) == 31

    eventually(copied, 60, "the held records copied once their schema came")
    assert DESTINATION.schema(schema_id) == SOURCE.schema(schema_id)
    assert DESTINATION.version(f"{topic}-value", 1) == SOURCE.version(f"{topic}-value", 1)
    assert_exact_copy(topic, topic)
    # The mirror's hold is gone from its report (which follows the data by up to an interval).
    eventually(lambda: not waits(mirror), 30, "the hold gone from the mirror's report")


def test_a_conflicting_id_holds_its_partition_until_the_destination_gives_it_up(
    make_link, make_topic, topic_name
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    link = make_link({"schema.sync.enable": "true", "schema.sync.ms": HOUR_MS})
    mirror = create_mirror(ACTOR, link, topic)
    # The same id names one schema on the source and another on the destination.
    schema_id = random.randrange(5_000_000, 6_000_000)
    ours = SchemaVersion(f"{topic}-value", 1, schema_id, optional_ints(topic, "V", "a"))
    theirs = SchemaVersion(f"{topic}-other", 1, schema_id, optional_ints(topic, "W", "b"))
    for held_by, version in ((SOURCE, ours), (DESTINATION, theirs)):
        held_by.set_mode("IMPORT", version.subject)
        held_by.register(version)
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic,
        [{"key": b"k", "value": framed(schema_id, b"x"), "timestamp": RECENT}],
    )

    def held_for_conflict() -> list[str]:
        beat(link)
        return [w for w in describe_mirror(mirror).schema_waits if "different schema" in w]

    eventually(held_for_conflict, 90, "the partition held for the conflicting id")
    row = SchemaSubjectSync.objects.get(link=link, subject=f"{topic}-value")
    assert row.state == "CONFLICT" and f"id {schema_id}" in row.message
    assert read_all(kafka.DESTINATION.bootstrap, topic) == []
    assert DESTINATION.schema(schema_id)["schema"] == theirs.schema  # never overwritten

    # Someone resolves it on the destination: the id is synced and the record lands.
    DESTINATION.delete_version(theirs.subject, 1)
    DESTINATION.delete_version(theirs.subject, 1, permanent=True)

    def copied() -> bool:
        beat(link)
        return len(read_all(kafka.DESTINATION.bootstrap, topic)) == 1

    eventually(copied, 60, "the record copied once the conflict was resolved")
    assert_exact_copy(topic, topic)
    assert DESTINATION.schema(schema_id)["schema"] == ours.schema


def test_promote_makes_the_topics_subjects_writable_on_the_destination_and_stops_their_sync(
    make_link, make_topic, topic_name, users
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    subject = f"{topic}-value"
    SOURCE.register(SchemaVersion(subject, 0, 0, optional_ints(topic, "V", "a")), keep_id=False)
    SOURCE.set_compatibility("FORWARD", subject)
    # In a context of the test's own: the ids a producer is given there after the promote come
    # from that context's own sequence, never from one other tests' schemas are synced into.
    context = unique_name()
    there = SchemaRegistry(f"{registry.DESTINATION.url}/contexts/.{context}")
    link = make_link({"schema.sync.enable": "true", "schema.context": context})
    mirror = create_mirror(ACTOR, link, topic)
    run_until_copied(link, [mirror])
    ClusterLink.objects.filter(pk=link.pk).update(schemas_synced_at=None)
    syncers.sync_link(link, timezone.now())
    assert there.mode(subject) == "IMPORT" and there.compatibility(subject) == "FORWARD"
    there.set_compatibility("NONE", subject)  # someone changes it there by hand meanwhile
    second = SchemaVersion(subject, 0, 0, optional_ints(topic, "V", "a", "b"))
    with pytest.raises(SchemaRegistryError):  # producers cannot register there yet
        there.register(second, keep_id=False)

    outcome = promote.stop_mirrors(ACTOR, link, [topic], promote.PROMOTE, wait=True)

    assert outcome[0].error == ""
    assert there.mode(subject) == "READWRITE"
    assert there.compatibility(subject) == "FORWARD"  # the producers meet the source's rules
    new_id = there.register(second, keep_id=False)
    assert there.versions(subject) == [1, 2]
    row = SchemaSubjectSync.objects.get(link=link, subject=subject)
    assert row.state == "PROMOTED" and "writable on the destination" in row.message
    event = AuditEvent.objects.get(action="schema.subjects_promoted")
    assert event.after == {"topic": topic, "subjects": [subject]}

    # The next sync leaves it alone: neither back to IMPORT nor its new version deleted.
    ClusterLink.objects.filter(pk=link.pk).update(schemas_synced_at=None)
    link.refresh_from_db()
    syncers.sync_link(link, timezone.now() + timedelta(hours=1))
    assert there.mode(subject) == "READWRITE"
    assert there.schema(new_id)
    assert SchemaSubjectSync.objects.get(link=link, subject=subject).state == "PROMOTED"


def test_after_a_reverse_the_new_primary_is_writable_and_the_old_sources_subjects_import(
    bidirectional, make_topic, topic_name
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    subject = f"{topic}-value"
    first = SOURCE.register(
        SchemaVersion(subject, 0, 0, optional_ints(topic, "V", "a")), keep_id=False
    )
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic,
        [{"value": framed(first, b"one"), "timestamp": RECENT}],
    )
    link = bidirectional(**{"schema.sync.enable": "true", "schema.sync.ms": HOUR_MS})
    peer = peer_of(link)
    assert peer.config("schema.sync.enable") == "true"
    create_mirror(ACTOR, link, topic)

    eventually(copied_over(link, kafka.DESTINATION.bootstrap, topic, 1), 90, "the first copied")
    assert DESTINATION.mode(subject) == "IMPORT"
    assert SOURCE.mode(subject) == "READWRITE"

    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic], reverse.START, wait=True)

    assert outcome.error == ""
    assert DESTINATION.mode(subject) == "READWRITE"  # the new primary's producers register
    produce(
        {"bootstrap.servers": kafka.DESTINATION.bootstrap},
        topic,
        [{"value": framed(first, b"two"), "timestamp": RECENT + 1}],
    )
    # The old source now mirrors it: the other half's next sync puts its subject in IMPORT.
    ClusterLink.objects.filter(pk=peer.pk).update(schemas_synced_at=None)
    eventually(copied_over(peer, kafka.SOURCE.bootstrap, topic, 2), 90, "the new one copied back")
    assert SOURCE.mode(subject) == "IMPORT"
    assert SchemaSubjectSync.objects.get(link=peer, subject=subject).state == "IN_STEP"
    assert read_all(kafka.SOURCE.bootstrap, topic) == read_all(kafka.DESTINATION.bootstrap, topic)


def test_a_failback_brings_the_new_primarys_schemas_first_and_puts_the_old_ones_in_import(
    bidirectional, make_topic, topic_name
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    subject = f"{topic}-value"
    # Each cluster's schemas in a context of the test's own, so that the ids the new primary's
    # producer is given after the failover cannot meet another test's: the link syncs dc1's
    # context into dc2's, and its other half dc2's back into dc1's.
    dc1_context, dc2_context = unique_name(), unique_name()
    dc1 = SchemaRegistry(f"{registry.SOURCE.url}/contexts/.{dc1_context}")
    dc2 = SchemaRegistry(f"{registry.DESTINATION.url}/contexts/.{dc2_context}")
    first = dc1.register(SchemaVersion(subject, 0, 0, optional_ints(topic, "V", "a")), False)
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic,
        [{"value": framed(first, b"one"), "timestamp": RECENT}],
    )
    link = bidirectional(
        **{
            "schema.sync.enable": "true",
            "schema.sync.ms": HOUR_MS,
            "schema.source.context": dc1_context,
            "schema.context": dc2_context,
        }
    )
    peer = peer_of(link)
    assert peer.config("schema.source.context") == dc2_context
    assert peer.config("schema.context") == dc1_context
    # No whole run of the other half within the test: only a record's wait brings its schema.
    ClusterLink.objects.filter(pk=peer.pk).update(schemas_synced_at=timezone.now())
    create_mirror(ACTOR, link, topic)
    eventually(copied_over(link, kafka.DESTINATION.bootstrap, topic, 1), 90, "the first copied")
    assert dc2.version(subject, 1) == dc1.version(subject, 1)

    # dc1 is lost: fail over; dc2's producers register a new version and write with it.
    (failed_over,) = promote.stop_mirrors(ACTOR, link, [topic], promote.FAILOVER, wait=True)
    assert failed_over.error == ""
    assert dc2.mode(subject) == "READWRITE"
    second = dc2.register(SchemaVersion(subject, 0, 0, optional_ints(topic, "V", "a", "b")), False)
    produce(
        {"bootstrap.servers": kafka.DESTINATION.bootstrap},
        topic,
        [{"value": framed(second, b"two"), "timestamp": RECENT + 1}],
    )

    # dc1 is back: the failback makes its topic a mirror of dc2's again.
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic], wait=True)
    assert outcome.error == ""

    def landed_after_its_schema() -> bool:
        copied = copied_over(peer, kafka.SOURCE.bootstrap, topic, 2)()
        if copied:  # the record is there, so its schema was there first
            assert dc1.schema(second)["schema"] == dc2.schema(second)["schema"]
        return copied

    eventually(landed_after_its_schema, 90, "the new primary's record copied back")
    assert dc1.mode(subject) == "IMPORT"  # dc1's producers cannot register beside dc2's now
    assert [dc1.version(subject, n) for n in (1, 2)] == [dc2.version(subject, n) for n in (1, 2)]
    assert SchemaSubjectSync.objects.get(link=peer, subject=subject).state == "IN_STEP"
    assert SchemaSubjectSync.objects.get(link=link, subject=subject).state == "PROMOTED"
    assert read_all(kafka.SOURCE.bootstrap, topic) == read_all(kafka.DESTINATION.bootstrap, topic)
