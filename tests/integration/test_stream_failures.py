"""The engine killed at any moment (whole, its Python driver, or a slot's Python worker), or
cut off by a broker restart, resumes exactly where each mirror partition stopped: the copy ends
with every record once."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time

import psutil
import pytest
from confluent_kafka.admin import NewTopic

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.processes import read_pidfile
from replication.engine import process, supervise
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import keep_producing
from tests.mirror_checks import (
    ACTOR,
    assert_exact_copy,
    committed_link,
    eventually,
    run_until_copied,
)

# The clusters are needed from the first line (not only by fixtures): up before the test starts.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db,
    pytest.mark.serial,
    pytest.mark.usefixtures("devstack"),
]


def _source_topic(partitions: int = 4) -> str:
    """A new, empty source topic (`keep_producing` writes it while the copy runs)."""
    topic = leftovers.unique_name("failures")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


def _copied(topic: str, partitions: int = 4) -> int:
    admin = KafkaAdmin(admin_config(kafka.DESTINATION))
    try:
        return sum(admin.end_offsets(topic, partitions).values())
    except KafkaAdminError:  # a new topic's leaders, or a restarting broker
        return -1


def _stream(link):
    return read_pidfile(process.pidfile())


def _wait_for_more(link, topic: str, than: int, working: bool = False) -> int:
    """Supervise until a stream is running and the mirror holds more than `than` records (and,
    if `working`, its copier tasks are up); return how many."""

    def more() -> int:
        supervise.supervise(link)
        running, copied = _stream(link), _copied(topic)
        ready = running and copied > than and (not working or "task worker" in _targets(link))
        return copied if ready else 0

    return eventually(more, 240, f"the stream copying past {than} records")


@pytest.fixture
def quick_restarts(monkeypatch):
    # Short pauses between restarts.
    monkeypatch.setattr(supervise, "BACKOFF_S", [1, 1, 1, 1, 1])


def _targets(link) -> dict[str, list[psutil.Process]]:
    """What can be killed in the running engine: the whole of it (the JVM's process group),
    its Python driver alone, or one slot's Python worker."""
    running = _stream(link)
    if running is None:
        return {}
    jvm = psutil.Process(running.pid)
    found = {"application": [jvm], "python driver": [], "task worker": []}
    for child in jvm.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            cmdline = " ".join(child.cmdline())
            if "engine.py" in cmdline:
                found["python driver"].append(child)
            elif "pyspark.daemon" in cmdline and child.parent().pid != jvm.pid:
                found["task worker"].append(child)  # forked by the daemon: runs a slot
    return {what: procs for what, procs in found.items() if procs}


def _kill(link, what: str) -> None:

    def found() -> list[psutil.Process]:
        supervise.supervise(link)
        return _targets(link).get(what, [])  # none while a job is being relaunched, say

    def killed() -> bool:
        target = random.choice(eventually(found, 240, f"a {what} to kill"))
        try:  # it may end by itself between being found and being killed: find another
            if what == "application":
                os.killpg(target.pid, signal.SIGKILL)
            else:
                target.send_signal(signal.SIGKILL)
        except (ProcessLookupError, psutil.NoSuchProcess):
            return False
        return True

    eventually(killed, 240, f"a {what} killed")


# Each on both copy paths: the batch path (the default) and the record path.
PATHS = pytest.mark.parametrize("path", ["BATCH", "RECORD"], ids=["batch-path", "record-path"])


@PATHS
def test_killing_the_application_driver_and_task_workers_five_times_loses_and_repeats_nothing(
    path, django_db_blocker, quick_restarts
):
    topic = _source_topic()
    writer = threading.Thread(target=keep_producing, args=(topic, 500_000, 4, 90))
    with committed_link(django_db_blocker, [topic], {"mirror.copy.path": path}) as link:
        mirror = create_mirror(ACTOR, link, topic)
        writer.start()
        # Each kind of kill at least once, in a random order.
        kinds = ["application", "python driver", "task worker"]
        plan = random.sample(kinds, 3) + random.choices(kinds, k=2)
        copied, killed = 0, []
        for what in plan:
            copied = _wait_for_more(link, topic, copied, working=True)
            time.sleep(random.uniform(0, 1.0))  # any moment
            _kill(link, what)
            killed.append((what, copied))
            copied = max(copied, _copied(topic))
        writer.join()
        run_until_copied(link, [mirror], timeout=300)
        source = assert_exact_copy(topic, topic)
    assert len(source) == 500_000, killed
    assert len({r.key for r in source}) == 500_000
    assert killed[-1][1] < 500_000, f"the copy was over before the last kill: {killed}"


@PATHS
def test_restarting_both_brokers_one_after_the_other_mid_copy_loses_and_repeats_nothing(
    path, django_db_blocker, quick_restarts, stack
):
    topic = _source_topic()
    # Idempotent: the source's own restart must not make the writer write a record twice.
    writer = threading.Thread(target=keep_producing, args=(topic, 300_000, 4, 120, True))
    with committed_link(django_db_blocker, [topic], {"mirror.copy.path": path}) as link:
        mirror = create_mirror(ACTOR, link, topic)
        writer.start()
        copied = _wait_for_more(link, topic, 10_000, working=True)
        for broker in ("source", "destination"):
            written_in_full = not writer.is_alive()
            stack.down([broker], echo=lambda _: None)
            time.sleep(3)
            stack.up([broker], echo=lambda _: None)
            assert not written_in_full, f"the source was written in full before {broker} went down"
            copied = _wait_for_more(link, topic, copied, working=True)
        writer.join()
        run_until_copied(link, [mirror], timeout=300)
        source = assert_exact_copy(topic, topic)
    assert len(source) == 300_000
    assert len({r.key for r in source}) == 300_000
