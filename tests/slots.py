"""A copier slot run in a thread of the test, the test playing the engine's driver (the epoch,
the link and its assignment written to Redis), with its Redis reached through a proxy the test
can cut; and a source written while it copies."""

from __future__ import annotations

import json
import socket
import threading
import time

import redis
from confluent_kafka import Producer

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from spark_jobs import control, slot
from tests.conftest import admin_config

RECENT = int(time.time() * 1000) - 600_000
ENGINE_KEY = "UECpr9uA5BtOAGSecLL3H4q03YEpepKthZDNXhE0uSg="  # a Fernet key for the tests
LINK_ID = "link-1"


class Proxy(threading.Thread):
    """A TCP proxy to Redis; `cut()` drops every connection and answers none until `mend()`."""

    def __init__(self, host: str, port: int):
        super().__init__(daemon=True)
        self.target = (host, port)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.sockets: list[socket.socket] = []

    @classmethod
    def to(cls, r: redis.Redis) -> Proxy:
        """A running proxy to the Redis `r` talks to."""
        kwargs = r.connection_pool.connection_kwargs
        proxy = cls(kwargs["host"], kwargs["port"])
        proxy.start()
        return proxy

    def url(self, r: redis.Redis) -> str:
        """The URL of `r`'s database through the proxy."""
        return f"redis://127.0.0.1:{self.port}/{r.connection_pool.connection_kwargs.get('db', 0)}"

    def run(self) -> None:
        while True:
            client, _ = self.server.accept()
            if not self.open.is_set():
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    def pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                s.close()

    def cut(self) -> None:
        self.open.clear()
        for s in self.sockets:
            s.close()
        self.sockets.clear()

    def mend(self) -> None:
        self.open.set()


class Source(threading.Thread):
    """Writes a record every millisecond or so to a 2-partition source topic until stopped
    (`idempotent`: each once, whatever the brokers do meanwhile)."""

    def __init__(self, topic: str, idempotent: bool = False):
        super().__init__(daemon=True)
        self.topic, self.written, self.done = topic, 0, threading.Event()
        self.config = {"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 1}
        if idempotent:
            self.config["enable.idempotence"] = True

    def run(self) -> None:
        producer = Producer(self.config)
        while not self.done.is_set():
            for _ in range(20):
                i = self.written
                producer.produce(
                    self.topic,
                    key=str(i).encode(),
                    value=b"v",
                    partition=i % 2,
                    timestamp=RECENT + i,
                )
                self.written += 1
            producer.poll(0.02)
        assert producer.flush(60) == 0


def start_slot(
    r: redis.Redis,
    engine: str,
    epoch: str,
    topic: str,
    redis_url: str,
    topic_id: str = "",
    path: str = "batch",
):
    """Make `epoch` the slot's current one, assign it the link copying `topic` (2 partitions,
    on both clusters; `topic_id` its id on the destination, asked for if not given) on the
    copy `path`, and run the slot in a thread reaching Redis at `redis_url`."""
    spec = {
        "link_id": LINK_ID,
        "link_name": "fencing",
        "source": {"bootstrap.servers": kafka.SOURCE.bootstrap},
        "destination": {"bootstrap.servers": kafka.DESTINATION.bootstrap},
        "path": path,
    }
    topic_id = (
        topic_id or KafkaAdmin(admin_config(kafka.DESTINATION)).describe_topic(topic).topic_id
    )
    r.hset(control.links_key(engine), LINK_ID, control.seal(ENGINE_KEY, spec))
    r.set(control.slot_epoch_key(engine, 0), epoch)
    partitions = [
        {"mirror": topic, "source": topic, "topic_id": topic_id, "partition": p, "runs": []}
        for p in range(2)
    ]
    assignment = {
        "epoch": epoch,
        "version": 1,
        "digest": control.digest(ENGINE_KEY, spec),
        "partitions": partitions,
    }
    r.hset(control.slot_assignment_key(engine, 0), LINK_ID, json.dumps(assignment))
    task_spec = {"engine": engine, "key": ENGINE_KEY, "redis_url": redis_url}
    task = threading.Thread(target=slot.SlotTask(task_spec, 0, epoch).run, daemon=True)
    task.start()
    return task


def end_slots(r: redis.Redis, engine: str, tasks: list[threading.Thread]) -> None:
    """End the slot's epoch, wait for its threads, and remove the engine's keys."""
    r.set(control.slot_epoch_key(engine, 0), "ended")
    for task in tasks:
        task.join(30)
    r.delete(*r.keys(control.engine_pattern(engine)) or ["none"])
