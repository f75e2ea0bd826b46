"""Steady-state replication latency: records produced to the source at fixed rates, received
by a consumer on the destination; latency is its receive wall time minus the record's timestamp.

The source topic stamps each record with the time the source broker appended it
(`message.timestamp.type=LogAppendTime`), and both engines copy that timestamp: so a latency is
from the moment a record can be read on the source to the moment it is read on the destination,
the part an engine is responsible for. The producer's own batching stays out of it; it uses the
client's default linger (5 ms), as a producer at 20,000 records/s would: with `linger.ms=0` it
sends a stream of tiny requests, and on this machine even the direct floor rose to 100-500 ms.
All on one host, so the brokers and the consumer read the same clock. One engine start serves
every rate, one after the other.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from . import cluster, procs
from .engine import Engine

# The first byte of a value says which measured window the record belongs to (b"0" for the
# first rate, b"1" for the second, ...) or that it is warmup, so no record outside a window can
# leak into its numbers whatever the clocks' resolution.
WARMUP = b"w"
DIRECT = "direct (no copy)"
READY_TIMEOUT = 120.0
DRAIN_TIMEOUT = 30.0
MAX_RATES = 10  # one digit per window mark
SOURCE_CONFIGS = {"message.timestamp.type": "LogAppendTime"}
LINGER_MS = 5  # the client's default (librdkafka's, and the Java client's since Kafka 4.0)


@dataclass(frozen=True)
class LatencyResult:
    """One rate's measured window."""

    engine: str
    rate: int
    seconds: float
    sent: int  # records produced in the measured window
    received: int  # of them, received on the destination
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu_seconds: float | None  # the engine's processes during the window
    peak: procs.Memory | None  # the engine's memory during the window

    def core_share(self) -> float | None:
        return None if self.cpu_seconds is None else self.cpu_seconds / self.seconds


@dataclass(frozen=True)
class LatencyRun:
    """One engine start serving every rate."""

    engine: str
    first_record_seconds: float  # process start to the first record copied, under load
    peak: procs.Memory | None  # the engine's memory over its whole run
    windows: list[LatencyResult]


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
        self.latencies: dict[bytes, list[float]] = {}
        self.stopping = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                # Wait for one record (consume(n) would wait for n or its whole timeout), then
                # take what else is already queued: those arrived before this moment too.
                first = self.consumer.poll(0.1)
                if first is None:
                    continue
                now_ms = time.time() * 1000
                for msg in [first, *self.consumer.consume(num_messages=10_000, timeout=0)]:
                    if error := msg.error():
                        self.error = error.str()
                        continue
                    self.received += 1
                    mark = (msg.value() or b"")[:1]
                    if mark != WARMUP:
                        self.latencies.setdefault(mark, []).append(now_ms - msg.timestamp()[1])
        finally:
            self.consumer.close()

    def measured(self, mark: bytes) -> int:
        return len(self.latencies.get(mark, ()))

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


class Pacer:
    """Produces to `topic` at a fixed rate, one phase at a time, checking the engine is well
    once a second (not at every record: Isthmus's check reads Redis)."""

    def __init__(self, topic: str, record_size: int, check: Callable[[], None]):
        self.producer = Producer(
            {"bootstrap.servers": cluster.SOURCE, "linger.ms": LINGER_MS, "acks": "all"}
        )
        self.topic = topic
        self.padding = b"x" * (record_size - 1)
        self.check = check
        self.checked = time.monotonic()

    def run(
        self,
        rate: int,
        mark: bytes,
        seconds: float,
        until: Callable[[], bool] | None = None,
    ) -> int:
        """Produce at `rate` for `seconds` or until `until()`; returns the records sent."""
        began = time.monotonic()
        sent = 0
        while (now := time.monotonic()) - began < seconds:
            while sent < int((now - began) * rate):
                self.producer.produce(self.topic, mark + self.padding)
                sent += 1
            self.producer.poll(0)
            if until is not None and until():
                return sent
            if now - self.checked >= 1.0:
                self.check()
                self.checked = now
            time.sleep(0.001)
        return sent

    def flush(self) -> None:
        self.producer.flush(30)


def _result(
    engine: str,
    rate: int,
    seconds: float,
    sent: int,
    values: list[float],
    cpu: float | None,
    peak: procs.Memory | None,
) -> LatencyResult:
    values = sorted(values)
    if not values:
        raise RuntimeError(f"{engine}: no measured record arrived at {rate:,} records/s")
    result = LatencyResult(
        engine,
        rate,
        seconds,
        sent,
        len(values),
        percentile(values, 0.50),
        percentile(values, 0.99),
        values[-1],
        cpu,
        peak,
    )
    cluster.log(
        f"{engine} at {rate:,} records/s: p50 {result.p50_ms:.0f} ms, p99 {result.p99_ms:.0f} ms, "
        f"max {result.max_ms:.0f} ms ({result.received:,}/{result.sent:,} received)"
    )
    return result


def run(
    engine: Engine | None,
    source_topic: str,
    partitions: int,
    record_size: int,
    rates: list[int],
    warmup: float,
    measure: float,
) -> LatencyRun:
    """One window per rate. With `engine` None, the consumer reads the source itself: the
    floor of the method."""
    if not 0 < len(rates) <= MAX_RATES:
        raise ValueError(f"between 1 and {MAX_RATES} rates")
    name = engine.name if engine else DIRECT
    cluster.create_topic(cluster.SOURCE, source_topic, partitions, SOURCE_CONFIGS)
    if engine is None:
        bootstrap, topic = cluster.SOURCE, source_topic
    else:
        bootstrap, topic = cluster.DESTINATION, engine.mirror_name(source_topic)
        engine.prepare({topic: source_topic}, partitions)
    receiver = Receiver(bootstrap, topic, partitions)
    receiver.start()
    proc = engine.start({topic: source_topic}, "latency") if engine else None
    started = time.monotonic()
    try:
        with procs.TreeSampler(proc.pid) if proc else contextlib.nullcontext() as sampler:
            pacer = Pacer(source_topic, record_size, lambda: _check(engine, proc))
            cluster.log(f"{name}: producing {rates[0]:,} records/s until it copies")
            pacer.run(rates[0], WARMUP, READY_TIMEOUT, until=lambda: receiver.received > 0)
            if receiver.received == 0:
                raise RuntimeError(f"{name}: nothing copied in {READY_TIMEOUT:.0f} s")
            ready = time.monotonic() - started
            cluster.log(f"{name}: first record {ready:.1f} s after the start; warming up")
            windows = [
                _measure(pacer, sampler, rate, str(i).encode(), warmup, measure)
                for i, rate in enumerate(rates)
            ]
            pacer.flush()
            # Let a lagging engine deliver the last window's tail.
            deadline = time.monotonic() + DRAIN_TIMEOUT
            while time.monotonic() < deadline and any(
                receiver.measured(mark) < sent for mark, _, sent, _, _ in windows
            ):
                time.sleep(0.1)
    finally:
        if engine:
            engine.stop()
        receiver.stop()
    results = [
        _result(name, rate, measure, sent, receiver.latencies.get(mark, []), cpu, peak)
        for mark, rate, sent, cpu, peak in windows
    ]
    return LatencyRun(name, ready, sampler.peak if sampler else None, results)


def run_all(
    engines: list[tuple[Engine | None, str]],
    topic: str,
    partitions: int,
    record_size: int,
    rates: list[int],
    warmup: float,
    measure: float,
) -> list[LatencyRun]:
    """`run` for each (engine, tag) in turn, each on a topic of its own (`topic`-tag)."""
    return [
        run(engine, f"{topic}-{tag}", partitions, record_size, rates, warmup, measure)
        for engine, tag in engines
    ]


def _measure(
    pacer: Pacer,
    sampler: procs.TreeSampler | None,
    rate: int,
    mark: bytes,
    warmup: float,
    measure: float,
) -> tuple[bytes, int, int, float | None, procs.Memory | None]:
    """Warm up at `rate`, then produce a measured window; the engine's CPU and memory in it."""
    cluster.log(f"at {rate:,} records/s: {warmup:.0f} s warmup, {measure:.0f} s measured")
    pacer.run(rate, WARMUP, warmup)
    if sampler is None:
        return mark, rate, pacer.run(rate, mark, measure), None, None
    cpu0 = sampler.cpu_seconds()
    sampler.new_window()
    sent = pacer.run(rate, mark, measure)
    return mark, rate, sent, sampler.cpu_seconds() - cpu0, sampler.window_peak()


def _check(engine: Engine | None, proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is not None:
        raise RuntimeError(f"the engine exited with {proc.returncode}; see its log")
    if engine is not None and (error := engine.error()):
        raise RuntimeError(f"{engine.name} failed: {error}")
