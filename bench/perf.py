"""The raw client limit, with as many clients at once as the copy has tasks: Kafka's own perf
tools (they also preload the source topic), and producers on the copier's own client library
(librdkafka), so that the limit does not stop at the Java tool's own cost."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from infra.kafka_errors import KafkaAdminError

from . import cluster, procs
from .catchup import POLL_SECONDS
from .cluster import KAFKA_RUN, ROOT, WORK, log

# The producer batching the Isthmus copier uses (linger a few ms, 1 MB batches); with the Java
# client's 16 KB default batches the producer limit is about half as high on this machine.
PRODUCER_PROPS = ["linger.ms=5", "batch.size=1048576", "acks=all"]
PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"
JAVA_PRODUCER = "producer-perf-test"
RD_PRODUCER = "confluent-kafka producer"


@dataclass(frozen=True)
class Limit:
    """N clients of one tool at once, and what the machine did meanwhile."""

    tool: str
    clients: int
    records: int  # all clients together
    seconds: float  # the measured span (see `produce` and `consume`)
    client_rates: list[float]  # records/s, as each client reported its own
    machine_busy: float  # share of the machine's CPU time in use over the span
    broker_cpu_seconds: float | None  # both brokers over the span
    client_cpu_seconds: float  # the clients' processes over the span

    def records_per_sec(self) -> float:
        return self.records / self.seconds

    def mib_per_sec(self, record_size: int) -> float:
        return self.records * record_size / self.seconds / 2**20


def _start(argv: list[str], name: str) -> subprocess.Popen:
    WORK.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=open(WORK / f"{name}.log", "w"),  # noqa: SIM115 (the child owns it)
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen, name: str) -> str:
    try:
        proc.wait(600)
    except subprocess.TimeoutExpired:
        procs.stop_group(proc)
    out = (WORK / f"{name}.log").read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed (var/bench/{name}.log): {out.strip()[-2000:]}")
    return out


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (i < total % parts) for i in range(parts)]


def _java_producer(bootstrap: str, topic: str, records: int, record_size: int) -> list[str]:
    return [
        str(KAFKA_RUN),
        PRODUCER,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(record_size),
        "--throughput",
        "-1",
        "--command-property",
        *PRODUCER_PROPS,
    ]


def _java_rate(out: str) -> float:
    # Its progress lines every 5 s have the same form as its summary, the last line.
    lines = re.findall(r"^(\d+) records sent, ([\d.]+) records/sec", out, re.MULTILINE)
    if not lines:
        raise RuntimeError(f"Unexpected producer-perf-test output: {out[-500:]}")
    return float(lines[-1][1])


def _rd_producer(bootstrap: str, topic: str, records: int, record_size: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bench.rdproduce",
        bootstrap,
        topic,
        str(records),
        str(record_size),
    ]


def _rd_rate(out: str) -> float:
    return json.loads(out.strip().splitlines()[-1])["records_per_sec"]


TOOLS: dict[str, tuple[Callable[..., list[str]], Callable[[str], float]]] = {
    JAVA_PRODUCER: (_java_producer, _java_rate),
    RD_PRODUCER: (_rd_producer, _rd_rate),
}


def produce(
    tool: str,
    bootstrap: str,
    topic: str,
    partitions: int,
    records: int,
    record_size: int,
    clients: int,
) -> Limit:
    """`clients` producers of `tool` at once, unthrottled, writing `records` in all.

    Measured from outside, as the copies are, reading the topic's end offsets (see `_watch`:
    this leaves out the clients' startup, as the copy time leaves out the engines')."""
    command, rate_of = TOOLS[tool]
    names = [f"{tool.split()[0]}-{topic}-{i}" for i in range(clients)]
    base = _count(bootstrap, {topic: partitions})  # before they start: fast ones write at once
    started = [
        _start(command(bootstrap, topic, n, record_size), name)
        for n, name in zip(_split(records, clients), names, strict=True)
    ]
    try:
        with contextlib.ExitStack() as stack:
            samplers = [stack.enter_context(procs.TreeSampler(p.pid)) for p in started]
            seconds, busy, broker_cpu, client_cpu = _watch(
                bootstrap, {topic: partitions}, records, base, started, samplers
            )
    except BaseException:
        for proc in started:
            procs.stop_group(proc, grace=5)
        raise
    rates = [rate_of(_finish(p, name)) for p, name in zip(started, names, strict=True)]
    limit = Limit(tool, clients, records, seconds, rates, busy, broker_cpu, client_cpu)
    log(
        f"{clients} × {tool} {topic}@{bootstrap}: {limit.records_per_sec():,.0f} records/s "
        f"({', '.join(f'{r:,.0f}' for r in rates)} as they report)"
    )
    return limit


def _count(bootstrap: str, topics: dict[str, int]) -> int:
    """The records the topics hold now (their end offsets summed)."""
    keys = [(t, p) for t, n in topics.items() for p in range(n)]
    return sum(cluster.admin(bootstrap).offsets(keys).values())


def _watch(
    bootstrap: str,
    topics: dict[str, int],
    records: int,
    base: int,
    started: list[subprocess.Popen],
    samplers: list[procs.TreeSampler],
) -> tuple[float, float, float | None, float]:
    """Wait until the topics hold `records` more records than `base` (what they held before the
    clients started); timed like a copy (see catchup._copy). Returns the span, the machine's
    busy share, the brokers' and the clients' CPU over it."""
    client = cluster.admin(bootstrap)
    keys = [(t, p) for t, n in topics.items() for p in range(n)]
    brokers = cluster.stack_pids()

    def now() -> tuple:
        cpu = sum(s.cpu_seconds() for s in samplers)
        return time.monotonic(), psutil.cpu_times(), procs.cpu_of(brokers), cpu

    empty, first = now(), None
    while True:
        ended = all(p.poll() == 0 for p in started)  # before the count: it may end meanwhile
        look = now()
        try:
            written = sum(client.offsets(keys).values()) - base
        except KafkaAdminError:
            written = None  # not known this time: a topic just made again
        if first is None and written == 0:
            empty = look
        elif first is None and written:
            first = empty
        if first is not None and written is not None and written >= records:
            at, machine, broker_cpu, client_cpu = now()
            return (
                max(at - first[0], POLL_SECONDS),
                procs.busy(first[1], machine),
                procs.used(first[2], broker_cpu),
                client_cpu - first[3],
            )
        failed = [p for p in started if p.poll() not in (None, 0)]
        if failed:
            raise RuntimeError(f"a producer exited with {failed[0].returncode}; see its log")
        if ended and written is not None and written < records:
            raise RuntimeError(f"the producers ended with {written:,} of {records:,} written")
        time.sleep(POLL_SECONDS)


def consume(bootstrap: str, topic: str, records: int, clients: int, group: str) -> Limit:
    """`clients` kafka-consumer-perf-tests at once, each in its own group reading the whole
    topic: the source serves `clients` times the data. The rate is the sum of their fetch.*
    rates (which leave out the group join, as the copy time leaves out the engines' startup);
    the machine's and brokers' CPU are over the tools' whole run."""
    machine0, brokers0 = psutil.cpu_times(), procs.cpu_of(cluster.stack_pids())
    cpu0 = procs.children_cpu()
    began = time.monotonic()
    names = [f"consumer-perf-{topic}-{i}" for i in range(clients)]
    started = [
        _start(
            [
                str(KAFKA_RUN),
                CONSUMER,
                "--bootstrap-server",
                bootstrap,
                "--topic",
                topic,
                "--num-records",
                str(records),
                "--group",
                f"{group}-{i}",
                "--timeout",
                "30000",
            ],
            name,
        )
        for i, name in enumerate(names)
    ]
    outputs = [_finish(p, name) for p, name in zip(started, names, strict=True)]
    busy = procs.busy(machine0, psutil.cpu_times())
    brokers1 = procs.cpu_of(cluster.stack_pids())
    rates = []
    for out in outputs:
        lines = [line for line in out.splitlines() if line.strip() and "," in line]
        header = [c.strip() for c in lines[-2].split(",")]
        values = dict(zip(header, (c.strip() for c in lines[-1].split(",")), strict=True))
        seconds = float(values["fetch.time.ms"]) / 1000
        rates.append(int(values["data.consumed.in.nMsg"]) / seconds)
    limit = Limit(
        "consumer-perf-test",
        clients,
        records * clients,
        records * clients / sum(rates),  # so that records_per_sec() is the sum of the rates
        rates,
        busy,
        procs.used(brokers0, brokers1),
        procs.children_cpu() - cpu0,
    )
    log(
        f"{clients} × consumer-perf-test {topic}@{bootstrap}: {limit.records_per_sec():,.0f} "
        f"records/s in all ({time.monotonic() - began:.0f} s with the JVMs' start)"
    )
    return limit
