"""Promote and failover on in-memory clusters (with the real engine, Celery worker and beat:
tests/integration/test_promote_failover.py): lag refusals name the partitions, no record of the
stream lands after the topic became writable, the topics diverge as in the tutorial, a stop that
cannot finish leaves the mirror as it was, and a failover works with the source cluster stopped."""

from __future__ import annotations

import time

import pytest

from devstack import kafka
from replication import audit, streams
from replication.mirrors import create_mirror, pause_mirror
from replication.models import AuditEvent, MirrorTopic
from replication.redis_channel import client
from spark_jobs import control
from tests.kafka_clients import produce

State = MirrorTopic.State
PLAIN = {"bootstrap.servers": kafka.DESTINATION.bootstrap}  # an ordinary client, no privilege
RECENT = int(time.time() * 1000) - 600_000


def _admin(users) -> audit.Actor:
    return audit.Actor(user=users["admin"], name="admin")


def _write(topic: str, first: int, count: int, partitions: int = 2) -> None:
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic,
        [
            {"key": str(i).encode(), "value": f"v{i}".encode(), "partition": i % partitions}
            for i in range(first, first + count)
        ],
    )


def _state(mirror: MirrorTopic) -> str:
    return MirrorTopic.objects.get(pk=mirror.pk).state


def _went_round(link, since_ms: float) -> bool:
    heartbeat = control.read_json(client(), control.heartbeat_key(str(link.link_id))) or {}
    return streams.status(link).state == "STOPPED" or heartbeat.get("at_ms", 0) > since_ms


def test_a_pause_racing_a_failure_does_not_overwrite_it(
    db, make_link, make_topic, topic_name, users
):
    from replication.mirrors import fail_mirror

    make_topic(kafka.SOURCE, topic_name, partitions=1)
    link = make_link()
    mirror = create_mirror(_admin(users), link, topic_name)
    stale = MirrorTopic.objects.get(pk=mirror.pk)  # a page loaded before the failure
    fail_mirror(mirror, MirrorTopic.Error.SOURCE_TOPIC_ID_CHANGED, "re-created")
    with pytest.raises(Exception, match="is FAILED now; it cannot be paused"):
        pause_mirror(_admin(users), stale)
    assert _state(mirror) == State.FAILED
    event = AuditEvent.objects.get(action="mirror.pause")
    assert event.result == "refused" and event.actor_name == "admin"


def _heartbeat(link) -> dict:
    return control.read_json(client(), control.heartbeat_key(str(link.link_id))) or {}
