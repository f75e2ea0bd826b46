"""Steady-state replication latency: records produced to the source at a fixed rate, received
by a consumer on the destination; latency is its receive wall time minus the record's
timestamp (CreateTime, set by our producer and kept by both engines). All on one host, so
both ends read the same clock."""

from __future__ import annotations

import contextlib
import math
import subprocess
import threading
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from . import cluster, procs
from .engine import Engine

# The first byte of a value says whether the record is in the measured window, so the
# warmup before it cannot leak into the numbers whatever the clocks' resolution.
MEASURED, WARMUP = b"m", b"w"
DIRECT = "direct (no copy)"
READY_TIMEOUT = 120.0


@dataclass(frozen=True)
class LatencyResult:
    engine: str
    rate: int
    seconds: float
    sent: int  # records produced in the measured window
    received: int  # of them, received on the destination
    p50_ms: float
    p99_ms: float
    max_ms: float
    peak_memory: int | None  # bytes, summed PSS of the engine's process tree
    micro_batches: int | None  # Isthmus only: micro-batches written in the window


class Receiver(threading.Thread):
    """Reads every partition of `topic` from the beginning and keeps measured latencies."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-latency",  # never joins: partitions are assigned directly
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        self.consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        )
        self.received = 0
        self.latencies: list[float] = []
        self.stopping = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                # poll, not consume(n): consume waits for n records or its whole timeout.
                msg = self.consumer.poll(0.1)
                now_ms = time.time() * 1000
                if msg is None:
                    continue
                if msg.error():
                    self.error = msg.error().str()
                    continue
                self.received += 1
                if msg.value()[:1] == MEASURED:
                    self.latencies.append(now_ms - msg.timestamp()[1])
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def _produce(
    producer: Producer,
    topic: str,
    padding: bytes,
    rate: int,
    warmup: float,
    measure: float,
    receiver: Receiver,
    engine: Engine | None,
    proc: subprocess.Popen | None,
) -> tuple[int, int | None]:
    """Produce at `rate` until the copy delivers, then `warmup` s, then `measure` s of measured
    records; returns how many were measured and the micro-batches written meanwhile."""
    started = time.monotonic()
    ready = window = None
    produced = sent = 0
    batches = None
    while True:
        now = time.monotonic()
        mark = WARMUP if window is None else MEASURED
        while produced < int((now - started) * rate):
            producer.produce(topic, mark + padding, timestamp=int(time.time() * 1000))
            produced += 1
            sent += mark == MEASURED
        producer.poll(0)
        if ready is None and receiver.received > 0:
            ready = now
            cluster.log(f"first record copied {now - started:.1f} s after the start; warming up")
        if ready is not None and window is None and now - ready >= warmup:
            window = now
            batches = engine.micro_batches() if engine else None
        if window is not None and now - window >= measure:
            if batches is not None:
                batches = engine.micro_batches() - batches
            return sent, batches
        if ready is None and now - started > READY_TIMEOUT:
            raise RuntimeError(f"nothing copied in {READY_TIMEOUT:.0f} s")
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the engine exited with {proc.returncode}; see its log")
        time.sleep(0.001)


def run(
    engine: Engine | None,
    source_topic: str,
    partitions: int,
    record_size: int,
    rate: int,
    warmup: float,
    measure: float,
) -> LatencyResult:
    """With `engine` None, the consumer reads the source itself: the floor of the method."""
    name = engine.name if engine else DIRECT
    cluster.create_topic(cluster.SOURCE, source_topic, partitions)
    if engine is None:
        bootstrap, topic = cluster.SOURCE, source_topic
    else:
        bootstrap, topic = cluster.DESTINATION, engine.mirror_name(source_topic)
        engine.prepare({topic: source_topic}, partitions)
    receiver = Receiver(bootstrap, topic, partitions)
    receiver.start()
    proc = engine.start({topic: source_topic}, "latency") if engine else None
    producer = Producer({"bootstrap.servers": cluster.SOURCE, "linger.ms": 0, "acks": "all"})
    padding = b"x" * (record_size - 1)
    cluster.log(f"{name}: producing {rate:,} records/s to {source_topic} until it copies")
    try:
        with procs.TreeSampler(proc.pid) if proc else contextlib.nullcontext() as sampler:
            sent, batches = _produce(
                producer, source_topic, padding, rate, warmup, measure, receiver, engine, proc
            )
            producer.flush(30)
            deadline = time.monotonic() + 30  # let a lagging engine deliver the window's tail
            while len(receiver.latencies) < sent and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        if engine:
            engine.stop()
        receiver.stop()
    values = sorted(receiver.latencies)
    if not values:
        raise RuntimeError(f"{name}: no measured record arrived ({receiver.error or 'no error'})")
    result = LatencyResult(
        name,
        rate,
        measure,
        sent,
        len(values),
        percentile(values, 0.50),
        percentile(values, 0.99),
        values[-1],
        sampler.peak_memory if proc else None,
        batches,
    )
    cluster.log(
        f"{name}: p50 {result.p50_ms:.0f} ms, p99 {result.p99_ms:.0f} ms, "
        f"max {result.max_ms:.0f} ms ({result.received:,}/{result.sent:,} received)"
    )
    return result
