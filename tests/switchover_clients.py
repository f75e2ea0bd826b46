"""Clients that keep running through a gateway while a cutover moves them (issue 46): Kafka's own
Java `VerifiableProducer` and `VerifiableConsumer` (run from Kafka's jars, JSON on stdout), and
a confluent-kafka (librdkafka) producer and consumer in threads. None is restarted or
reconfigured; each keeps what it was told (acknowledged records, records read) with the time it
learnt it, for the test to check record by record."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer

from devstack.kafka import KAFKA_RUN
from infra.consuming import take

# Both Java clients: back within a second of the proxy listening again, and a producer that
# holds its records through a pause of up to two minutes (delivery.timeout.ms).
JAVA_CONFIG = """\
reconnect.backoff.ms=100
reconnect.backoff.max.ms=1000
retry.backoff.max.ms=1000
metadata.max.age.ms=5000
"""
# The tool sets retries=0 itself: a producer that keeps its records needs them. Neither
# producer is idempotent: the engine's producer on the destination may hold the very producer
# id the source gave a client (both clusters number them from 0), and then the destination
# finds the client's sequence out of order (docs/gateways.md): once, on a fresh stack,
# librdkafka's producer stopped with that fatal error.
PRODUCER_CONFIG = JAVA_CONFIG + (
    "enable.idempotence=false\nretries=2147483647\ndelivery.timeout.ms=120000\n"
)
RD_CONFIG = {"reconnect.backoff.max.ms": 1000, "topic.metadata.refresh.interval.ms": 5000}


@dataclass(frozen=True)
class Acked:
    at: float  # when the client learnt it (time.time())
    partition: int
    offset: int
    value: str


@dataclass(frozen=True)
class Read:
    at: float
    partition: int
    offset: int
    value: str


@dataclass
class Client:
    """What a client was told, kept as it ran."""

    name: str
    acked: list[Acked] = field(default_factory=list)
    read: list[Read] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def longest_pause(self) -> tuple[float, float]:
        """The longest time without an acknowledgement: (its length, when it began)."""
        return _longest_gap(a.at for a in self.acked)

    def longest_read_pause(self) -> tuple[float, float]:
        """The longest time without a record read: (its length, when it began)."""
        return _longest_gap(r.at for r in self.read)


def _longest_gap(moments: Iterable[float]) -> tuple[float, float]:
    times = sorted(moments)
    return max(((b - a, a) for a, b in zip(times, times[1:], strict=False)), default=(0, 0))


class JavaClient(Client):
    """A Java tool whose JSON lines on stdout are read as they come."""

    def __init__(self, name: str, main: str, args: list[str], config: str, folder: Path):
        super().__init__(name)
        self.stopping = False
        config_file = folder / f"{name}.properties"
        config_file.write_text(config)
        self.log = folder / f"{name}.stderr"
        self.process = subprocess.Popen(
            [str(KAFKA_RUN), main, *args, "--command-config", str(config_file)],
            stdout=subprocess.PIPE,
            stderr=self.log.open("wb"),
            text=True,
        )
        self.started = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the tool's own words, not an event
            self.took(event, time.time())

    def took(self, event: dict, at: float) -> None:
        raise NotImplementedError

    def says(self) -> str:
        """Its last words on stderr, for a test that finds it stopped early."""
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return "\n".join(lines[-15:])

    def stop(self) -> None:
        """As an operator stops it (SIGTERM: it flushes, commits and says it shut down). What
        it says from then on is its own shutdown's, not the test's: a send the tool tries after
        its producer closed fails ("Cannot perform operation after producer has been closed")."""
        self.stopping = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.reader.join(10)


class JavaProducer(JavaClient):
    def __init__(self, bootstrap: str, topic: str, per_second: int, folder: Path):
        args = ["--bootstrap-server", bootstrap, "--topic", topic]
        args += ["--throughput", str(per_second), "--value-prefix", "1"]
        super().__init__(
            "java-producer",
            "org.apache.kafka.tools.VerifiableProducer",
            args,
            PRODUCER_CONFIG,
            folder,
        )

    def took(self, event: dict, at: float) -> None:
        if event.get("name") == "producer_send_success":
            self.acked.append(Acked(at, event["partition"], event["offset"], event["value"]))
        elif event.get("name") == "producer_send_error" and not self.stopping:
            self.errors.append(f"{event.get('exception')}: {event.get('message')}")
        elif event.get("name") == "startup_complete":
            self.started.set()


class JavaConsumer(JavaClient):
    def __init__(self, bootstrap: str, topic: str, group: str, folder: Path):
        args = ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group]
        args += ["--verbose", "--reset-policy", "earliest"]
        super().__init__(
            "java-consumer", "org.apache.kafka.tools.VerifiableConsumer", args, JAVA_CONFIG, folder
        )

    def took(self, event: dict, at: float) -> None:
        if event.get("name") == "record_data":
            self.read.append(Read(at, event["partition"], event["offset"], event["value"]))
        elif event.get("name") == "offsets_committed" and not event.get("success", True):
            self.errors.append(f"commit failed: {event.get('error')}")
        elif event.get("name") == "partitions_assigned":
            self.started.set()


class RdClient(Client):
    """A librdkafka client run by a thread of its own until `stop`."""

    def __init__(self, name: str):
        super().__init__(name)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread.ident is not None:  # started
            self.thread.join(130)


class RdProducer(RdClient):
    """A librdkafka producer (not idempotent: PRODUCER_CONFIG) writing "rd.N" at
    `per_second`."""

    def __init__(self, bootstrap: str, topic: str, per_second: int):
        super().__init__("librdkafka-producer")
        self.topic, self.interval = topic, 1 / per_second
        self.producer = Producer({"bootstrap.servers": bootstrap, **RD_CONFIG})

    def _delivered(self, err: KafkaError | None, msg) -> None:
        if err is not None:
            self.errors.append(err.str())
        else:
            self.acked.append(
                Acked(time.time(), msg.partition(), msg.offset(), msg.value().decode())
            )

    def run(self) -> None:
        seq = 0
        while not self.done.is_set():
            try:
                self.producer.produce(self.topic, f"rd.{seq}".encode(), on_delivery=self._delivered)
                seq += 1
            except BufferError:
                pass
            self.producer.poll(self.interval)
        self.producer.flush(120)


class RdConsumer(RdClient):
    """A librdkafka consumer of a group, committing what it read after each batch."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        super().__init__("librdkafka-consumer")
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **RD_CONFIG,
            }
        )
        self.consumer.subscribe([topic])

    def run(self) -> None:
        while not self.done.is_set():
            batch = [m for m in take(self.consumer, 500, 0.2) if m.error() is None]
            now = time.time()
            for m in batch:
                self.read.append(Read(now, m.partition(), m.offset(), (m.value() or b"").decode()))
            if batch:
                try:
                    self.consumer.commit(asynchronous=False)
                except Exception as exc:  # noqa: BLE001 - kept: the test says what failed
                    self.errors.append(f"commit failed: {exc}")
        self.consumer.close()
