"""The engine restarted by another host (issue 45): host A's supervisor starts the engine, which
is killed with its whole process group (`kill -9`) while a link copies; host B's supervisor
(another STREAM_DIR, so no pid file of A's, and another host name; the same database and Redis)
sees its heartbeat gone and starts it within ENGINE_TAKEOVER_S and a few seconds, and the mirror
ends an exact copy. Host A, back, starts no second engine. Both hosts' supervisors are this
process's, as each host's worker calls them."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings
from django.test import override_settings

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core import redis_channel
from replication.engine import process, supervise
from replication.topics.mirrors import create_mirror
from spark_jobs import control
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

pytestmark = [pytest.mark.ha, pytest.mark.django_db, pytest.mark.usefixtures("devstack")]

RECORDS, PARTITIONS, WRITING_S = 120_000, 4, 60
STARTED_WITHIN_S = 6  # beyond ENGINE_TAKEOVER_S: the supervisor's 1 s rounds and the start


@contextlib.contextmanager
def host(name: str, folder: Path) -> Iterator[None]:
    """This process as host `name`'s worker: its own host name and engine folder."""
    with override_settings(HOST_NAME=name, STREAM_DIR=folder):
        yield


def _copied(topic: str) -> int:
    try:
        ends = KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, PARTITIONS)
    except KafkaAdminError:  # the mirror's partitions not there yet
        return -1
    return sum(ends.values())


def test_the_engine_killed_with_its_host_is_started_by_another_host_and_copies_exactly(
    django_db_blocker, own_engine, tmp_path
):
    topic = leftovers.unique_name("takeover")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    writer = threading.Thread(target=keep_producing, args=(topic, RECORDS, PARTITIONS, WRITING_S))
    a, b = tmp_path / "host-a", tmp_path / "host-b"
    with committed_link(django_db_blocker, [topic]) as link:
        try:
            mirror = create_mirror(ACTOR, link, topic)
            writer.start()
            with host("host-a", a):

                def copying_on_a() -> bool:
                    supervise.supervise(link)
                    return process.running() is not None and _copied(topic) > 5_000

                eventually(copying_on_a, 240, "host A's engine copying")
                engine = process.running()
                assert engine is not None
                os.killpg(engine.pid, signal.SIGKILL)  # the engine's host dies
                killed = time.monotonic()
            with host("host-b", b):

                def started_on_b() -> bool:
                    supervise.supervise(link)
                    time.sleep(1)  # the beat's supervision runs every 2 s
                    return process.running() is not None

                limit = settings.ENGINE_TAKEOVER_S + STARTED_WITHIN_S
                eventually(started_on_b, limit + 30, "host B starting the engine")
                started = time.monotonic() - killed
                copied_before = _copied(topic)  # host A's engine is gone by now

                def copying_on_b() -> bool:
                    supervise.supervise(link)
                    return _copied(topic) > copied_before

                eventually(copying_on_b, 180, "host B's engine copying")
                resumed = time.monotonic() - killed
                writer.join()
                run_until_copied(link, [mirror], timeout=300)
                assert len(assert_exact_copy(topic, topic)) == RECORDS
                on_b = control.engine_heartbeat(redis_channel.client(), own_engine)
                assert on_b.get("host") == "host-b", on_b
            with host("host-a", a):  # host A is back: it starts no engine of its own
                for _ in range(3):
                    supervise.supervise(link)
                    assert process.running() is None
        finally:
            if writer.ident:
                writer.join()
            with host("host-b", b):
                supervise.stop(link)
                supervise.stop_engine()
    print(
        f"\nEngine killed on host A: host B started it {started:.1f} s later (takeover after "
        f"{settings.ENGINE_TAKEOVER_S:.0f} s of silence), the mirror grew again {resumed:.1f} s "
        f"after the kill; {RECORDS} records copied exactly"
    )
    assert started <= limit, started
