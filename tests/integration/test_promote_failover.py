"""Promote and failover on the real clusters, with the real stream, Celery worker and beat:
lag refusals name the partitions, no record of the stream lands after the topic became
writable, the topics diverge as in the tutorial, and a failover works with the source cluster
stopped. Refusals and a stop the engine does not acknowledge are
tests/db/test_promote_failover.py."""

from __future__ import annotations

import threading
import time

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from replication.core.redis_channel import client
from replication.cutover import promote
from replication.engine import status
from replication.models import AuditEvent, ClusterLink
from replication.sync import syncers
from replication.topics.links import resume_link
from replication.topics.mirrors import create_mirror
from spark_jobs import control
from tests.db.test_promote_failover import State, _admin, _state
from tests.kafka_clients import acls_on, produce
from tests.mirror_checks import caught_up, eventually, read_all

pytestmark = pytest.mark.integration


PLAIN = {"bootstrap.servers": kafka.DESTINATION.bootstrap}  # an ordinary client, no privilege


RECENT = int(time.time() * 1000) - 600_000


def _write(topic: str, first: int, count: int, partitions: int = 2) -> None:
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic,
        [
            {"key": str(i).encode(), "value": f"v{i}".encode(), "partition": i % partitions}
            for i in range(first, first + count)
        ],
    )


def _went_round(link, since_ms: float) -> bool:
    heartbeat = control.read_json(client(), control.heartbeat_key(str(link.link_id))) or {}
    return status.status(link).state == "STOPPED" or heartbeat.get("at_ms", 0) > since_ms


def _heartbeat(link) -> dict:
    return control.read_json(client(), control.heartbeat_key(str(link.link_id))) or {}


def test_it_refuses_a_lagging_promote_then_stops_the_writer_before_the_topic_is_writable(
    transactional_db, celery_worker, make_link, make_topic, topic_name, users
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    _write(topic_name, 0, 301)  # 151 records on partition 0, 150 on partition 1
    link = make_link({"cluster.link.paused": "true"})  # nothing is copied yet
    mirror = create_mirror(_admin(users), link, topic_name)
    assert mirror.state == State.LINK_PAUSED

    [refused] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE)
    assert refused.status == 409
    assert "partition 0 lags 151 records" in refused.error
    assert "partition 1 lags 150 records" in refused.error
    assert _state(mirror) == State.LINK_PAUSED
    assert (
        AuditEvent.objects.filter(action="mirror.promote", result="refused", actor_name="admin")
        .get()
        .message
        == refused.error
    )

    resume_link(_admin(users), link)
    eventually(lambda: caught_up(mirror), 180, "copying the mirror")
    [dry_run] = promote.stop_mirrors(
        _admin(users), link, [topic_name], promote.PROMOTE, validate_only=True
    )
    assert not dry_run.error and [p.lag for p in dry_run.lags] == [0, 0]
    assert _state(mirror) == State.ACTIVE

    [scheduled] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE)
    assert not scheduled.error and scheduled.state == State.PENDING_STOPPED
    # The source keeps being written from the moment the promote is asked for (which may finish
    # before the first of those records is written: it waits only for the stream to stop).
    stop_writing, written = threading.Event(), [0]

    def keep_writing():
        while not stop_writing.is_set():
            _write(topic_name, 1000 + written[0], 20)
            written[0] += 20

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        eventually(lambda: _state(mirror) == State.STOPPED, 120, "the promote finishing")
        eventually(lambda: written[0] > 0, 30, "the source written after the promote was asked")
    finally:
        stop_writing.set()
        writer.join()
    mirror.refresh_from_db()
    assert mirror.pending_stop is None and mirror.stop_report["kind"] == "promote"
    # A stream still writing would show once it has gone round again: wait for its next
    # heartbeat (or its end, the link having no other mirror).
    stopped_ms = time.time() * 1000
    eventually(lambda: _went_round(link, stopped_ms), 30, "the stream's next beat or its end")
    copied = read_all(kafka.DESTINATION.bootstrap, topic_name)
    ends = {p: sum(1 for r in copied if r.partition == p) for p in (0, 1)}
    assert {str(p): n for p, n in ends.items()} == mirror.stop_offsets
    source = read_all(kafka.SOURCE.bootstrap, topic_name)
    assert copied == [r for r in source if r.offset < ends[r.partition]]
    assert len(source) > len(copied), "the records written during the promote stayed behind"
    assert acls_on(kafka.DESTINATION, topic_name) == set()

    # Now the topics diverge, as in the tutorial: `old` on the source, `new` on the mirror,
    # which an ordinary producer may write to now.
    source_config = {"bootstrap.servers": kafka.SOURCE.bootstrap}
    [(error, _, _)] = produce(source_config, topic_name, [{"value": b"old", "partition": 0}])
    assert error is None
    [(error, _, offset)] = produce(PLAIN, topic_name, [{"value": b"new", "partition": 0}])
    assert error is None and offset == ends[0]
    mirrored = [r.value for r in read_all(kafka.DESTINATION.bootstrap, topic_name)]
    original = [r.value for r in read_all(kafka.SOURCE.bootstrap, topic_name) if r.partition == 0]
    assert original[-1] == b"old" and b"new" not in original
    assert mirrored[ends[0]] == b"new" and b"old" not in mirrored

    [again] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE)
    assert f"Topic '{topic_name}' has already stopped its mirror from '{link.name}'" in again.error
    assert AuditEvent.objects.filter(action="mirror.promote", result="ok").count() == 1
    assert (
        AuditEvent.objects.filter(action="mirror.stopped", target=f"mirror {topic_name}").count()
        == 1
    )


@pytest.mark.serial
def test_a_failover_works_with_the_source_cluster_stopped(
    transactional_db, celery_worker, stack, make_link, make_topic, topic_name, users, client_as
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    _write(topic_name, 0, 200)
    link = make_link(
        {"availability.check.ms": "1000", "availability.check.consecutive.failure.threshold": "2"}
    )
    mirror = create_mirror(_admin(users), link, topic_name)
    eventually(lambda: caught_up(mirror), 180, "copying the mirror")
    stream_pid = _heartbeat(link)["pid"]
    stack.down(["source"], echo=lambda _: None)
    try:
        # The link's availability check fails twice (its threshold), run here as the beat runs
        # it: the beat's one worker may be seconds behind, each of its checks waiting out a
        # timeout (test_syncers.py waits for the beat's own).
        for _ in range(2):
            syncers.check_source(ClusterLink.objects.get(pk=link.pk), timezone.now())
        eventually(
            lambda: _state(mirror) == State.SOURCE_UNAVAILABLE, 30, "the link seeing the outage"
        )
        # The application keeps its heartbeat while its source is down (nothing in its loop
        # waits on the source), so it is not restarted and acknowledges the failover at once.
        eventually(lambda: _heartbeat(link)["error"], 30, "the heartbeat telling of the outage")
        # The overview shows the mirror in trouble, and its clusters part the source down.
        viewer = client_as("viewer")
        overview = viewer.get(reverse("dashboard")).content.decode()
        assert 'id="troubled-mirrors"' in overview and f'data-mirror="{topic_name}"' in overview
        clusters = viewer.get(reverse("clusters"), HTTP_HX_REQUEST="true").content.decode()
        source_row = clusters[clusters.index('data-cluster="source"') :]
        assert (
            '<span class="badge bad">unreachable</span>' in source_row[: source_row.index("</tr>")]
        )
        [refused] = promote.stop_mirrors(_admin(users), link, [topic_name], promote.PROMOTE)
        assert "promote needs it ACTIVE or PAUSED" in refused.error
        [outcome] = promote.stop_mirrors(
            _admin(users), link, [topic_name], promote.FAILOVER, wait=True
        )
        assert not outcome.error, outcome.error
        assert _heartbeat(link)["pid"] == stream_pid
        mirror.refresh_from_db()
        assert mirror.state == State.STOPPED
        assert mirror.stop_offsets == {"0": 100, "1": 100}
        assert mirror.stop_report["kind"] == "failover"
        [(error, _, offset)] = produce(PLAIN, topic_name, [{"value": b"new", "partition": 0}])
        assert error is None and offset == 100
    finally:
        stack.up(["source"], echo=lambda _: None)
