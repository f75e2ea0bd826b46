"""The engine restarted by another host (issue 45): host A's supervisor starts the engine, which
is killed with its whole process group (`kill -9`) while a link copies; host B's supervisor
(another STREAM_DIR, so no pid file of A's, and another host name; the same database and Redis)
sees its heartbeat gone and starts it within ENGINE_TAKEOVER_S and a few seconds, copying
resumes within 30 s of the kill (measured from record timestamps, tests/copy_gaps.py), and the
mirror ends an exact copy. Host A, back, starts no second engine. Both hosts' supervisors are
this process's, as each host's worker calls them."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic
from django.conf import settings
from django.test import override_settings

from devstack import kafka
from infra.admin_client import AdminClient
from replication.core import redis_channel
from replication.engine import process, supervise
from replication.topics.mirrors import create_mirror
from spark_jobs import control
from tests import leftovers
from tests.conftest import admin_config
from tests.copy_gaps import MirrorTail, StampedWriter
from tests.mirror_checks import (
    ACTOR,
    assert_exact_copy,
    committed_link,
    eventually,
    run_until_copied,
)

pytestmark = [pytest.mark.ha, pytest.mark.django_db, pytest.mark.usefixtures("devstack")]

RATE, PARTITIONS = 2_000, 4
STARTED_WITHIN_S = 6  # beyond ENGINE_TAKEOVER_S: the supervisor's 1 s rounds and the start
RESUMED_WITHIN_S = 30  # the bound: copying again on the survivor within 30 s


@contextlib.contextmanager
def host(name: str, folder: Path) -> Iterator[None]:
    """This process as host `name`'s worker: its own host name and engine folder."""
    with override_settings(HOST_NAME=name, STREAM_DIR=folder):
        yield


def test_the_engine_killed_with_its_host_is_started_by_another_host_and_copies_exactly(
    django_db_blocker, own_engine, tmp_path
):
    topic = leftovers.unique_name("takeover")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    writer, tail = StampedWriter(topic, PARTITIONS, RATE), MirrorTail(topic, PARTITIONS)
    a, b = tmp_path / "host-a", tmp_path / "host-b"
    with committed_link(django_db_blocker, [topic]) as link:
        try:
            mirror = create_mirror(ACTOR, link, topic)
            with host("host-a", a):
                run_until_copied(link, [mirror])  # the engine up first: no backlog of its start
                writer.start()
                tail.start()

                def copying_on_a() -> bool:
                    supervise.supervise(link)
                    return process.running() is not None and tail.keeps_up(3)

                eventually(copying_on_a, 120, "host A's engine copying")
                engine = process.running()
                assert engine is not None
                os.killpg(engine.pid, signal.SIGKILL)  # the engine's host dies
                killed = time.time()
            with host("host-b", b):

                def started_on_b() -> bool:
                    supervise.supervise(link)
                    time.sleep(1)  # the beat's supervision runs every 2 s
                    return process.running() is not None

                limit = settings.ENGINE_TAKEOVER_S + STARTED_WITHIN_S
                eventually(started_on_b, limit + 30, "host B starting the engine")
                started = time.time() - killed

                def copying_on_b() -> bool:
                    supervise.supervise(link)
                    return tail.timeline.batches[-1].visible > killed + started

                eventually(copying_on_b, 180, "host B's engine copying")
                written = writer.finish()
                timeline = tail.finish(written)
                run_until_copied(link, [mirror], timeout=300)
                assert len(assert_exact_copy(topic, topic)) == written
                on_b = control.engine_heartbeat(redis_channel.client(), own_engine)
                assert on_b.get("host") == "host-b", on_b
            with host("host-a", a):  # host A is back: it starts no engine of its own
                for _ in range(3):
                    supervise.supervise(link)
                    assert process.running() is None
        finally:
            if writer.ident:
                writer.finishing.set()
                writer.join()
            tail.finishing.set()
            with host("host-b", b):
                supervise.stop(link)
                supervise.stop_engine()
    resumed = timeline.resumed_after(killed)
    print(
        f"\nEngine killed on host A at {RATE:,} records/s: host B started it {started:.1f} s "
        f"later (takeover after {settings.ENGINE_TAKEOVER_S:.0f} s of silence), copying resumed "
        f"{resumed:.1f} s after the kill; {timeline.describe(killed)}; {written:,} records "
        f"copied exactly (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    assert started <= limit, started
    assert resumed <= RESUMED_WITHIN_S, timeline.describe(killed)
