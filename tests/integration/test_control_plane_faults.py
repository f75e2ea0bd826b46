"""The control plane can fail under a running copy: the Celery worker and its beat killed with
`kill -9`, Redis restarted. The copy stays exact and the link recovers by itself, once a worker
runs again (as a process manager would restart it)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid

import psutil
import pytest

from replication.engine import status
from replication.models import ClusterLink
from replication.topics.mirrors import create_mirror
from tests.conftest import start_celery_worker, stop_process
from tests.integration.test_stream_failures import _copied, _source_topic
from tests.kafka_clients import keep_producing
from tests.mirror_checks import ACTOR, assert_exact_copy, caught_up, committed_link, eventually

# The worker sees only committed rows.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.serial,
    pytest.mark.usefixtures("devstack"),  # its first lines need the clusters up
]


def _kill_hard(proc) -> None:
    """kill -9 the worker and everything it started (the embedded beat included)."""
    parent = psutil.Process(proc.pid)
    for p in [*parent.children(recursive=True), parent]:
        with contextlib.suppress(psutil.Error):
            p.send_signal(signal.SIGKILL)
    proc.wait()


def test_killing_the_worker_and_beat_and_restarting_redis_mid_copy_keeps_the_copy_exact(
    django_db_blocker, stack, tmp_path
):
    topic = _source_topic()
    node = f"faults-{uuid.uuid4().hex[:6]}@localhost"
    worker = start_celery_worker(tmp_path, node)
    writer = threading.Thread(target=keep_producing, args=(topic, 300_000, 4, 60))
    try:
        with committed_link(django_db_blocker, [topic]) as link:
            mirror = create_mirror(ACTOR, link, topic)
            writer.start()
            # The beat starts the stream: nothing here supervises it.
            eventually(lambda: _copied(topic) > 10_000, 120, "the beat running the stream")

            _kill_hard(worker)
            worker = start_celery_worker(tmp_path, node)
            stack.down(["redis"], echo=lambda _: None)
            time.sleep(3)
            stack.up(["redis"], echo=lambda _: None)
            assert writer.is_alive(), "the source was written in full before the faults"

            writer.join()
            eventually(lambda: caught_up(mirror), 240, "the copy catching up by itself")
            link.refresh_from_db()
            assert link.state == ClusterLink.State.ACTIVE
            assert status.status(link).state == "RUNNING"
            assert len(assert_exact_copy(topic, topic)) == 300_000
    finally:
        stop_process(worker)
        writer.join()
