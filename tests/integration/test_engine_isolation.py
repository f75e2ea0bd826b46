"""One engine runs every link, and a link in trouble holds up no other: beside a link whose
source cluster is down and a link whose password is wrong, a busy link's records keep landing
within seconds (never waiting out a troubled link's timeouts), its copiers are never
restarted, and each troubled link says what is wrong."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from confluent_kafka import Producer
from django.urls import reverse

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.core import redis_channel
from replication.engine import process, status, supervise
from replication.topics.mirrors import create_mirror
from spark_jobs import control
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, assert_exact_copy, eventually, run_until_copied

pytestmark = pytest.mark.integration

RECENT = int(time.time() * 1000) - 600_000
OVERSLEEP_S = 0.1  # a sleep overrunning by more than this: the watcher itself was not run
# The busy link's longest stand-still: under a second on a quiet machine, 1.9 s once on one the
# tests loaded, 3.05 s once beside three test workers. A link held up by a troubled one waits
# out its timeouts: 5 s (a copier's metadata call) and more.
STALL_S = 4.0


def _write(topic: str, first: int, count: int, bootstrap: str = kafka.SOURCE.bootstrap) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        producer.produce(topic, key=str(i).encode(), value=b"v" * 50, timestamp=RECENT + i)
    assert producer.flush(30) == 0


class Busy(threading.Thread):
    """Writes about 200 records a second to the busy link's source topic, and watches its
    mirror's end: the longest time it stood still while records kept coming."""

    def __init__(self, topic: str):
        super().__init__(daemon=True)
        self.topic, self.written, self.longest_stall = topic, 0, 0.0
        self.done = threading.Event()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 1})
        admin = KafkaAdmin(admin_config(kafka.DESTINATION))
        last, since = -1, time.monotonic()
        while not self.done.is_set():
            for _ in range(10):
                i = self.written
                producer.produce(
                    self.topic, key=str(i).encode(), partition=i % 2, timestamp=RECENT + i
                )
                self.written += 1
            producer.poll(0)
            now = time.monotonic()
            copied = sum(admin.end_offsets(self.topic, 2).values())
            if copied != last:
                last, since = copied, now
            self.longest_stall = max(self.longest_stall, now - since)
            slept = time.monotonic()
            time.sleep(0.05)
            # A busy machine not running this thread for a while is not the copy stalling:
            # meanwhile it neither wrote nor looked.
            since += max(0.0, time.monotonic() - slept - 0.05 - OVERSLEEP_S)
        assert producer.flush(30) == 0


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copier_runs(link) -> dict[int, str]:
    """Each slot's copier of the link, by its run id (a restarted copier has a new one)."""
    found = {}
    for report in _slot_reports():
        if report and (mine := report["links"].get(str(link.link_id))):
            found[report["slot"]] = mine["run"]
    return found


def _slot_reports() -> list[dict | None]:
    r = redis_channel.client()
    heartbeat = control.read_json(r, control.engine_heartbeat_key(process.engine_id())) or {}
    keys = [
        control.slot_report_key(process.engine_id(), s["slot"], s["epoch"])
        for s in heartbeat.get("slots", [])
    ]
    return [control.read_json(r, key) for key in keys]


def test_a_link_to_a_stopped_cluster_and_one_with_a_wrong_password_never_delay_a_busy_link(
    db, make_link, make_topic, topic_name, var_dir, client_as
):
    topics = {name: f"{topic_name}-{name}" for name in ("busy", "down", "denied")}
    for topic in topics.values():
        make_topic(kafka.SOURCE, topic, partitions=2)
        _write(topic, 0, 100)
    replicator = kafka.sasl_client_config(kafka.SOURCE, var_dir, user="replicator")
    links = {
        "busy": make_link(),
        "down": make_link(),
        "denied": make_link(configs=replicator),
    }
    mirrors = {name: create_mirror(ACTOR, links[name], topics[name]) for name in links}
    for name, link in links.items():
        run_until_copied(link, [mirrors[name]], timeout=120)
    # Now the trouble: one link's source stops answering (nothing listens where it points),
    # the other's password is wrong. Each link's runner starts again with its new spec.
    broken = {
        "down": {"bootstrap.servers": f"127.0.0.1:{_unused_port()}"},
        "denied": {**replicator, "sasl.password": "not-the-password"},
    }
    for name, configs in broken.items():
        links[name].set_configs(configs)
        links[name].save()
        supervise.supervise(links[name])
    for name in broken:
        _write(topics[name], 100, 50)

    busy = Busy(topics["busy"])
    busy.start()
    eventually(lambda: _copier_runs(links["busy"]), 30, "the busy link's copiers reporting")
    runs_before = _copier_runs(links["busy"])
    epochs_before = [r["epoch"] for r in _slot_reports() if r]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the beat's rounds, meanwhile
        for link in links.values():
            supervise.supervise(link)
        time.sleep(1)
    busy.done.set()
    busy.join()

    assert busy.longest_stall < STALL_S, f"the busy link stalled {busy.longest_stall:.2f} s"
    assert _copier_runs(links["busy"]) == runs_before, "the busy link's copiers restarted"
    assert [r["epoch"] for r in _slot_reports() if r] == epochs_before, "a slot restarted"
    assert status.status(links["busy"]).state == "RUNNING"
    down, denied = status.status(links["down"]), status.status(links["denied"])
    assert "source cluster" in down.error, down
    assert "uthentication" in denied.error, denied
    run_until_copied(links["busy"], [mirrors["busy"]], timeout=60)
    assert len(assert_exact_copy(topics["busy"], topics["busy"])) == 100 + busy.written

    # The Data plane page and /metrics show which slot holds which link's partitions.
    client = client_as("viewer")
    page = client.get(reverse("data-plane")).content.decode()
    for slot in runs_before:
        assert f'data-slot="{slot}" data-link="{links["busy"].name}"' in page, page
    assert f"0/{topics['busy']}" in page and f"1/{topics['busy']}" in page
    metrics = client.get(reverse("metrics")).content.decode()
    assert (
        f'isthmus_engine_slot_partitions{{slot="{min(runs_before)}",link="{links["busy"].name}"}}'
        in metrics
    )
