"""Automatic mirror topics on the real clusters: selected topics there now or made later are
mirrored at the link's metadata refresh and copied exactly by the engine; a mirror a user
deleted comes back only for a LITERAL include of its name; a prefixed link names its mirrors
prefix + source (what is never mirrored: tests/db/test_auto_mirrors.py).

Every topic name carries the session marker (the test's `topic_name`, or `unique_name`)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from django.utils import timezone

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.sync import syncers
from replication.topics.links import alter_link_configs
from replication.topics.mirrors import delete_mirror
from tests.conftest import admin_config
from tests.db.test_auto_mirrors import auto, mirrored, refresh, topic_filters
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, commit_offsets
from tests.leftovers import unique_name
from tests.mirror_checks import (
    ACTOR,
    assert_exact_copy,
    committed_link,
    eventually,
    run_until_copied,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


RECENT = int(time.time() * 1000) - 600_000  # within the brokers' retention


def destination_topics() -> set[str]:
    return KafkaAdmin(admin_config(kafka.DESTINATION)).list_topic_names()


def produce(topic: str, count: int, partitions: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(start, start + count):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode() * (1 + i % 7),
            partition=i % partitions,
            timestamp=RECENT + i,
            headers=[("n", str(i).encode())],
        )
    assert producer.flush(30) == 0


def test_a_prefixed_include_mirrors_exactly_the_topics_it_selects(
    make_link, make_topic, topic_name
):
    base = topic_name
    chosen = [make_topic(kafka.SOURCE, f"{base}-{n}", partitions=2) for n in ("a", "b")]
    excluded = make_topic(kafka.SOURCE, f"{base}-skip")
    unselected = make_topic(kafka.SOURCE, unique_name("auto-other"))
    internal = make_topic(kafka.SOURCE, f"_isthmus-{unique_name('internal')}")
    link = make_link(
        auto(
            (f"{base}-", "PREFIXED", "INCLUDE"),
            (excluded, "LITERAL", "EXCLUDE"),
            # Internal topics are never mirrored, even when a filter names them.
            (internal, "LITERAL", "INCLUDE"),
            ("__consumer_offsets", "LITERAL", "INCLUDE"),
        )
    )
    # A first committed offset creates __consumer_offsets on a fresh cluster.
    commit_offsets(kafka.SOURCE, unique_name("auto-offsets"), {(chosen[0], 0): 0})
    assert "__consumer_offsets" in KafkaAdmin(admin_config(kafka.SOURCE)).list_topic_names()

    refresh(link)
    assert mirrored(link) == {t: t for t in chosen}
    assert "auto-create" not in link.sync_problems
    on_destination = destination_topics()
    assert set(chosen) <= on_destination
    assert not {excluded, unselected, internal} & on_destination
    for topic in chosen:
        mirror = MirrorTopic.objects.get(link=link, source_topic=topic)
        assert (mirror.state, mirror.num_partitions, mirror.read_only_enforced) == (
            "ACTIVE",
            2,
            True,
        )
        eventually(lambda t=topic: acls_on(kafka.DESTINATION, t) == READ_ONLY_ACLS, 30, topic)
    created = AuditEvent.objects.filter(action="mirror.create", result="ok")
    by_system = created.filter(actor_name="system (auto-create)")
    assert sorted(by_system.values_list("target", flat=True)) == [
        f"mirror {t} on link {link.name}" for t in chosen
    ]

    # Nothing more on the next run: every selected topic has its mirror.
    refresh(link)
    assert mirrored(link) == {t: t for t in chosen}
    assert created.count() == 2


def test_a_topic_made_after_the_link_is_mirrored_at_the_next_refresh_and_copied_exactly(
    django_db_blocker,
):
    base = unique_name("auto-later")
    topic = f"{base}-orders"
    configs = auto((f"{base}-", "PREFIXED", "INCLUDE"), **{"metadata.max.age.ms": "5000"})
    with committed_link(django_db_blocker, [topic], configs) as link:
        start = timezone.now()

        def run(at):
            link.refresh_from_db()
            syncers.sync_link(link, at)
            link.refresh_from_db()

        run(start)
        assert mirrored(link) == {}
        assert link.metadata_refreshed_at == start

        admin = AdminClient(admin_config(kafka.SOURCE))
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
        eventually(
            lambda: topic in KafkaAdmin(admin_config(kafka.SOURCE)).list_topic_names(), 15, topic
        )
        produce(topic, 600, 3)

        run(start + timedelta(seconds=2))  # metadata.max.age.ms has not passed
        assert mirrored(link) == {}
        run(start + timedelta(seconds=5))
        assert mirrored(link) == {topic: topic}
        assert "auto-create" not in link.sync_problems

        produce(topic, 300, 3, start=600)  # written while the stream copies
        mirror = MirrorTopic.objects.get(link=link, source_topic=topic)
        run_until_copied(link, [mirror])
        source = assert_exact_copy(topic, topic)
        assert len(source) == 900
        assert {r.partition for r in source} == {0, 1, 2}


def test_a_deleted_mirror_comes_back_only_for_a_literal_include_of_its_name(
    make_link, make_topic, topic_name
):
    by_user, on_destination = (
        make_topic(kafka.SOURCE, f"{topic_name}-{n}") for n in ("deleted", "dropped")
    )
    prefixed = (f"{topic_name}-", "PREFIXED", "INCLUDE")
    link = make_link(auto(prefixed))
    refresh(link)
    assert mirrored(link) == {by_user: by_user, on_destination: on_destination}

    # One deleted through Isthmus, one as an ordinary topic delete on the destination.
    delete_mirror(ACTOR, MirrorTopic.objects.get(link=link, source_topic=by_user))
    admin = AdminClient(admin_config(kafka.DESTINATION))
    admin.delete_topics([on_destination])[on_destination].result(30)

    def forgotten():
        refresh(link)  # the refresh notices the topic is gone and forgets the mirror
        return on_destination not in mirrored(link)

    eventually(forgotten, 30, "the mirror deleted on the destination being forgotten")
    assert set(link.declined_topics) == {by_user, on_destination}
    for _ in range(2):  # the PREFIXED include still selects both: neither comes back
        refresh(link)
        assert mirrored(link) == {}
        assert "auto-create" not in link.sync_problems
    assert not {by_user, on_destination} & destination_topics()

    # A LITERAL include of one's name brings that one back (once its old topic is gone).
    alter_link_configs(
        ACTOR,
        link,
        {
            "auto.create.mirror.topics.filters": topic_filters(
                prefixed, (by_user, "LITERAL", "INCLUDE")
            )
        },
    )

    def back():
        refresh(link)
        return by_user in mirrored(link)

    eventually(back, 60, "the literally included mirror coming back")
    assert mirrored(link) == {by_user: by_user}
    assert by_user in destination_topics()
    assert link.declined_topics == [on_destination]
    refresh(link)
    assert "auto-create" not in link.sync_problems


def test_a_prefixed_link_names_the_mirror_prefix_plus_source(make_link, make_topic, topic_name):
    source = make_topic(kafka.SOURCE, f"{topic_name}-p")
    # The filters name source topics, not the prefixed mirror names.
    link = make_link(
        {"cluster.link.prefix": "east.", **auto((f"{topic_name}-", "PREFIXED", "INCLUDE"))}
    )
    refresh(link)
    assert mirrored(link) == {source: f"east.{source}"}
    assert "auto-create" not in link.sync_problems
    on_destination = destination_topics()
    assert f"east.{source}" in on_destination and source not in on_destination
    eventually(
        lambda: acls_on(kafka.DESTINATION, f"east.{source}") == READ_ONLY_ACLS, 30, "read-only"
    )

    # Deleted, it stays deleted: the declined topic is the source's name.
    delete_mirror(ACTOR, link.mirrors.get())
    refresh(link)
    assert mirrored(link) == {}
    assert link.declined_topics == [source]


def test_automatic_mirrors_beyond_one_request_are_each_handed_to_the_engine_once_made(
    make_link, make_topic, topic_name, monkeypatch
):
    # Two topics of 2 partitions (3 records each, and a config or so) per controller request:
    # the first request's mirrors must reach the engine before the second request is sent.
    monkeypatch.setattr("infra.kafka_topics.MAX_RECORDS_PER_REQUEST", 9)
    topics = [make_topic(kafka.SOURCE, f"{topic_name}-{n}", partitions=2) for n in "abcd"]
    link = make_link(auto((f"{topic_name}-", "PREFIXED", "INCLUDE")))
    handed = []

    def publish_now(published: ClusterLink) -> None:
        running = MirrorTopic.objects.filter(link=published, state="ACTIVE")
        handed.append(
            (sorted(running.values_list("mirror_topic", flat=True)), destination_topics())
        )

    monkeypatch.setattr("replication.engine.publish.publish_now", publish_now)
    refresh(link)
    assert mirrored(link) == {t: t for t in topics}
    assert len(handed) > 1, handed
    first, made_by_then = handed[0]
    assert first and set(first) <= made_by_then
    assert not set(topics[-1:]) & made_by_then  # the last request was not sent yet
    assert handed[-1][0] == sorted(topics)
