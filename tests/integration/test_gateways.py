"""A gateway switched under a running producer and consumer: a real Kroxylicious in front of the
source cluster, on a host of the gateways' own (a worker taking their queue, as the compose
file's `gateway` service), defined on the console's page, a long-lived idempotent
confluent-kafka producer and a consumer through it, switched to the destination cluster from
the gateway's page (after a switch to a cluster that does not answer, refused with the route
as it was). Every record
the producer was acknowledged is on the clusters, once on each: the source's up to the switch,
the destination's after, none lost; those in flight at the switch are on both (the test says how
many). The clients' pause (last record acknowledged before the switch, first after) is
printed."""

from __future__ import annotations

import os
import re
import threading
import time

import psutil
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from django.contrib.messages import get_messages
from django.urls import reverse

from devstack import kafka
from infra import kroxylicious, processes
from infra.consuming import take
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka import gateways
from replication.models import AuditEvent, Gateway, KafkaCluster
from tests.conftest import start_celery_worker, stop_process

pytestmark = pytest.mark.kafka

INTERVAL_S = 0.01  # between records: 100 a second


def _reader(bootstrap: str, topic: str) -> Consumer:
    """A consumer of the topic's one partition from its start, assigned: no group is made."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    return consumer


def _all_values(bootstrap: str, topic: str) -> list[int]:
    consumer = _reader(bootstrap, topic)
    values: list[int] = []
    idle_until = time.monotonic() + 10
    while time.monotonic() < idle_until:
        batch = take(consumer, 500, 1.0)
        if batch:
            values += [int(m.value() or b"-1") for m in batch if m.error() is None]
            idle_until = time.monotonic() + 3
    consumer.close()
    return values


class Writer(threading.Thread):
    """One producer for the whole test: it is never restarted nor reconfigured."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        self.acked: list[tuple[float, int]] = []
        self.failed: list[str] = []
        self.done = threading.Event()

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append((time.monotonic(), int(msg.value())))

    def run(self) -> None:
        seq = 0
        while not self.done.is_set():
            try:
                self.producer.produce(self.topic, str(seq).encode(), on_delivery=self._delivered)
                seq += 1
            except BufferError:
                pass
            self.producer.poll(INTERVAL_S)
        self.producer.flush(60)


class Reader(threading.Thread):
    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.consumer = _reader(bootstrap, topic)
        self.read: list[tuple[float, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for m in take(self.consumer, 500, 0.2):
                if m.error() is None:
                    self.read.append((time.monotonic(), int(m.value() or b"-1")))
        self.consumer.close()


def _a_switch_that_cannot_be_puts_the_route_back(gateway, source) -> None:
    """A cluster that does not answer: the switch is refused with the proxy's log, and the
    proxy answers on the source again."""
    nowhere = KafkaCluster.objects.create(
        name="nowhere",
        bootstrap_servers=f"127.0.0.1:{kroxylicious.free_block(39400)}",
        cluster_id="x",
    )
    gateway.clusters.add(nowhere)
    with pytest.raises(ReplicationError) as refused:
        gateways.switch(audit.Actor.system("tests"), gateway, nowhere)
    words = str(refused.value)
    assert refused.value.status == 503
    assert "did not start on nowhere" in words and "did not answer through it within 15 s" in words
    assert "back on source, as before" in words, words
    assert "io.kroxylicious" in words  # the last lines of its log
    gateway.refresh_from_db()
    assert (gateway.route, gateway.switches) == (source, 0)
    route = gateways.route_to(gateway, source)
    assert kroxylicious.cluster_id(route) == source.cluster_id


def _done(response) -> str:
    """The page's success message, once it redirected; else what it said was wrong."""
    said = [str(m) for m in get_messages(response.wsgi_request)]
    refused = re.findall(r'role="alert">([^<]*)', response.content.decode())
    assert response.status_code == 302 and not refused, (response.status_code, refused, said)
    return " ".join(said)


@pytest.fixture
def gateway_host(transactional_db, devstack, tmp_path, settings, monkeypatch):
    """A host of the gateways' own, as the compose file's `gateway` service: a real worker
    taking a queue of its own, where every proxy this test asks for runs (and waits 15 s, the
    default, for a cluster to answer through it: a proxy put back on its cluster on a loaded
    machine once took longer than 8 s)."""
    queue = f"gateways-{os.getpid()}"
    monkeypatch.setenv("ISTHMUS_GATEWAY_ANSWER_S", "15")
    worker = start_celery_worker(tmp_path, f"test-{queue}@localhost", queue)
    settings.GATEWAY_QUEUE = queue
    try:
        yield worker
    finally:
        stop_process(worker)


def test_a_switch_moves_a_running_producer_to_the_other_cluster_with_every_record_once(
    gateway_host, registered_clusters, make_topic, topic_name, client_as
):
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    make_topic(kafka.SOURCE, topic_name)
    make_topic(kafka.DESTINATION, topic_name)
    actor = audit.Actor.system("tests")
    admin = client_as("admin")
    began = time.monotonic()
    name, address = topic_name[-60:], f"127.0.0.1:{kroxylicious.free_block(29400)}"
    defined = admin.post(
        reverse("gateway-create"),
        {
            "name": name,
            "address": address,
            "clusters": ["source", "destination"],
            "route": "source",
        },
    )
    assert f"answers at {address} and routes to source" in _done(defined)
    started = time.monotonic() - began
    gateway = Gateway.objects.get(name=name)
    # Its proxy runs on the gateways' host, started by its worker.
    proxy = processes.read_pidfile(gateways.pidfile(gateway))
    assert proxy is not None and psutil.Process(proxy.pid).ppid() == gateway_host.pid
    try:
        _a_switch_that_cannot_be_puts_the_route_back(gateway, source)
        writer = Writer(gateway.address, topic_name)
        reader = Reader(gateway.address, topic_name)
        try:
            writer.start()
            reader.start()
            assert processes.wait_for(lambda: len(writer.acked) >= 100, 30), writer.failed[:3]
            switch_began = time.monotonic()
            switch = reverse("gateway-switch", args=[gateway.name, destination.name])
            asked = admin.post(switch, {"confirm_name": gateway.name})
            assert "routes its clients to destination now" in _done(asked)
            switched = time.monotonic() - switch_began
            after = len(writer.acked)
            assert processes.wait_for(lambda: len(writer.acked) >= after + 100, 60), writer.failed
            writer.done.set()
            writer.join(70)
            # The consumer finds its topic anew on the destination (its position there is out of
            # range, reset to the earliest): seconds on a loaded machine, so it is waited for (a
            # fixed 10 s once ended it before it read one).
            processes.wait_for(lambda: any(v >= after for _, v in reader.read), 60)
            reader.done.set()
            reader.join(10)
        finally:
            writer.done.set()
            reader.done.set()
    finally:
        gateways.delete(actor, gateway)
        gateways.logfile(gateway).unlink(missing_ok=True)

    assert writer.failed == []
    on_source = _all_values(kafka.SOURCE.bootstrap, topic_name)
    on_destination = _all_values(kafka.DESTINATION.bootstrap, topic_name)
    acked = sorted(value for _, value in writer.acked)
    # Each cluster holds a run of the sequence once, in order: the source's from the first
    # record, the destination's from where the source's ends or before, to the last; none is
    # lost. Those on both are what the source wrote but never acknowledged: in flight when the
    # proxy stopped, retried by the producer on the destination (idempotence dedupes on one
    # cluster only). Bounded by what is in flight, a fraction of a second's records.
    assert acked == list(range(len(acked)))
    assert on_source == list(range(len(on_source)))
    first = on_destination[0]
    assert on_destination == list(range(first, len(acked)))
    twice = len(on_source) - first
    assert 0 <= twice <= 100, f"{twice} records on both clusters"

    last_before = max(t for t, v in writer.acked if v < first)
    first_after = min(t for t, v in writer.acked if v >= first)
    read_after = [v for t, v in reader.read if v >= first]
    print(
        f"\ngateway started in {started:.1f} s; switch {switched:.1f} s; producer paused "
        f"{first_after - last_before:.1f} s ({len(on_source)} records on the source, "
        f"{len(on_destination)} on the destination, {twice} on both); the consumer read "
        f"{len(reader.read)} records, {len(read_after)} of them the destination's"
    )
    # The consumer, never restarted, reads the destination's records after the switch.
    assert read_after
    event = AuditEvent.objects.filter(action="gateway.switch").latest("pk")
    assert (event.before["route"], event.after["route"]) == ("source", "destination")
    assert event.actor_name.startswith("admin"), event.actor_name
