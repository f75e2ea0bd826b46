"""Retention outrunning replication is caught: a paused mirror whose source deletes records it
never copied says which ones, exactly, on its page, on the overview, in /metrics and in the
audit trail; a mirror that copied everything before the deletion lost nothing."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.core.redis_channel import client
from replication.engine import publish
from replication.models import AuditEvent, MirrorTopic
from replication.observe import lag
from replication.topics.mirrors import create_mirror, pause_mirror
from tests.conftest import admin_config
from tests.kafka_clients import produce
from tests.mirror_checks import ACTOR, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _write(topic: str, count: int) -> None:
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, topic, [{"value": b"r"}] * count)


def test_a_paused_mirror_whose_source_deletes_what_it_did_not_copy_says_exactly_what(
    make_link, make_topic, topic_name, client_as, typed
):
    make_topic(kafka.SOURCE, topic_name, **{"segment.ms": "100"})
    _write(topic_name, 5)
    link = make_link()
    kept = make_topic(kafka.SOURCE, f"{topic_name}-kept", **{"segment.ms": "100"})
    _write(kept, 5)
    time.sleep(0.3)
    _write(kept, 5)  # a second segment: the first can go
    mirror, copied = (create_mirror(ACTOR, link, t) for t in (topic_name, kept))
    run_until_copied(link, [mirror, copied])
    pause_mirror(ACTOR, mirror)
    generation = publish.publish(link, client())  # as the beat would, at its next tick
    assert wait_for(lambda: publish.stopped_writing(link, topic_name, generation), 30)
    _write(topic_name, 5)  # offsets 5-9: never copied
    time.sleep(0.3)
    _write(topic_name, 5)  # 10-14, in a segment of their own: the others' close
    source = KafkaAdmin(admin_config(kafka.SOURCE))
    for topic in (topic_name, kept):  # a tiny retention: closed segments go within a second
        source.alter_topic_configs(topic, {"retention.ms": "100"}, [])
    # Retention takes every record at last (the active segment too, once all of it expired).
    start = 15
    assert wait_for(lambda: source.start_offsets(topic_name, 1)[0] == start, 60)
    assert wait_for(lambda: source.start_offsets(kept, 1)[0] == 10, 60)

    lag.sample_all()  # as the beat does every 10 s

    mirror = MirrorTopic.objects.get(pk=mirror.pk)
    assert mirror.records_lost == {"0": [5, start]}
    assert MirrorTopic.objects.get(pk=copied.pk).records_lost == {}  # it had everything
    said = f"partition 0 offsets 5 to {start - 1}"
    page = client_as("viewer").get(reverse("mirror-detail", args=["destination", topic_name]))
    assert 'id="records-lost"' in page.content.decode() and said in page.content.decode()
    overview = client_as("viewer").get(reverse("dashboard")).content.decode()
    assert '<span class="stat-value" id="stat-troubled">1</span>' in overview and said in overview
    metrics = client_as("viewer").get("/metrics").content.decode()
    ids = f'link="{link.name}",destination="destination",mirror="{topic_name}"'
    assert f"isthmus_mirror_records_lost{{{ids}}} {start - 5}" in metrics
    event = AuditEvent.objects.get(action="mirror.records_lost")
    assert event.actor_name == "system (verification)" and said in event.message
    described = typed(
        f"kafka-mirrors --bootstrap-server {kafka.DESTINATION.bootstrap} --describe "
        f"--include-verification --topics {topic_name}"
    )
    lost = f"    Records lost: {start - 5} source records were deleted at the source (retention) "
    assert f"{lost}before the mirror copied them: {said}." in described.stdout, described.stderr

    # Noticed once; sampling again finds nothing new.
    lag.sample_all()
    assert AuditEvent.objects.filter(action="mirror.records_lost").count() == 1
