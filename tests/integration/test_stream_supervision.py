"""The Celery beat runs each link's stream: it starts with a mirror to run, follows mirror
pauses and resumes within seconds without touching the other mirrors, and stops when the link
is paused."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from devstack import kafka
from replication.core import redis_channel
from replication.engine import process, status, supervise
from replication.governance import audit
from replication.models import ClusterLink, MirrorTopic
from replication.observe.lag import describe_mirror
from replication.topics.links import pause_link
from replication.topics.mirrors import create_mirror, pause_mirror, resume_mirror
from spark_jobs import control
from tests.mirror_checks import assert_exact_copy, caught_up, eventually, run_until_copied

pytestmark = pytest.mark.integration

ACTOR = audit.Actor.system("tests")
RECENT = int(time.time() * 1000) - 600_000


def _write(topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(first, first + count):
        producer.produce(topic, key=str(i).encode(), value=b"v" * 100, timestamp=RECENT + i)
    assert producer.flush(30) == 0


def _mirrored(mirror: MirrorTopic) -> int:
    return sum(p.dest_log_end_offset for p in describe_mirror(mirror).partitions)


def test_the_beat_runs_the_stream_and_follows_pauses_without_touching_other_mirrors(
    transactional_db, celery_worker, make_link, make_topic, topic_name
):
    link = make_link()
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    for topic in (first, second):
        make_topic(kafka.SOURCE, topic, partitions=2)
        _write(topic, 0, 1000)
    mirrors = [create_mirror(ACTOR, link, t) for t in (first, second)]

    eventually(lambda: all(caught_up(m) for m in mirrors), 180, "copying both mirrors")
    assert status.status(link).state == "RUNNING"

    paused = pause_mirror(ACTOR, mirrors[0])
    # The beat tells the stream, whose heartbeat then no longer names the paused mirror.
    eventually(
        lambda: (
            status.status(link).state == "RUNNING" and first not in status.progress(link).writing
        ),
        30,
        "the stream letting go of the paused mirror",
    )
    for topic in (first, second):
        _write(topic, 1000, 500)
    eventually(lambda: caught_up(mirrors[1]), 30, "copying the running mirror")
    assert _mirrored(paused) == 1000, "a paused mirror copied records"

    resume_mirror(ACTOR, paused)
    eventually(lambda: caught_up(paused), 30, "copying the resumed mirror")
    for topic in (first, second):  # nothing copied twice, nothing skipped
        assert len(assert_exact_copy(topic, topic)) == 1500

    pause_link(ACTOR, ClusterLink.objects.get(pk=link.pk))
    eventually(lambda: status.status(link).state == "STOPPED", 30, "stopping the stream")


def test_a_link_that_is_gone_leaves_the_engine_and_one_never_seen_is_left(devstack, own_engine, db):
    r = redis_channel.client()
    gone, unseen, kept = (str(uuid.uuid4()) for _ in range(3))
    for link_id in (gone, unseen, kept):
        r.hset(control.links_key(own_engine), link_id, "{}")

    def published() -> set[str]:
        return {link.decode() for link in r.hkeys(control.links_key(own_engine))}

    supervise.forget_deleted_links({gone, kept})  # a first round sees two links
    assert published() == {gone, unseen, kept}
    supervise.forget_deleted_links({kept})  # the next: `gone` was deleted
    assert published() == {unseen, kept}  # `unseen`: not committed yet


def test_the_engine_starts_warm_a_first_link_copies_on_it_and_it_stops_after_its_links_leave(
    own_engine, settings, make_link, make_topic, topic_name
):
    """Without ISTHMUS_ENGINE_LAZY the supervision starts the engine with no link at all, so a
    user's first link finds it running: the link's first records land on that same engine
    (no second start). Stopping the engine lets its links leave and its slots end before
    Spark stops."""
    settings.ENGINE_LAZY = False
    supervise.supervise_engine()
    eventually(lambda: status.engine_status().state == "RUNNING", 120, "the engine's start")
    warm = status.engine_status().pid

    make_topic(kafka.SOURCE, topic_name)
    _write(topic_name, 0, 10)
    link = make_link()
    mirror = create_mirror(ACTOR, link, topic_name)
    run_until_copied(link, [mirror], timeout=60)
    assert status.engine_status().pid == warm
    assert len(assert_exact_copy(topic_name, topic_name)) == 10
    logged = process.log_file().read_text(errors="replace")

    assert supervise.stop_engine() is not None  # it waits for the whole engine to be gone
    engine = control.read_json(redis_channel.client(), control.engine_heartbeat_key(own_engine))
    heartbeat = control.read_json(redis_channel.client(), control.heartbeat_key(str(link.link_id)))
    assert engine["state"] == "stopped", engine  # it ended its run itself, not killed
    assert heartbeat["state"] == "stopped", heartbeat
    log = process.log_file().read_text(errors="replace")[len(logged) :]
    assert f"Link {link.name}: left the engine" in log
    assert "Python worker exited unexpectedly" not in log  # no slot was cut off by Spark
