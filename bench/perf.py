"""Kafka's own perf tools: they preload the source topic and measure the raw client limit."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from .cluster import KAFKA_RUN, WORK, log

# The producer batching the Isthmus writer uses (linger 5 ms, 1 MB batches); with the Java
# client's 16 KB default batches the producer limit is about half as high on this machine.
PRODUCER_PROPS = ["linger.ms=5", "batch.size=1048576", "acks=all"]


@dataclass(frozen=True)
class Rate:
    records: int
    seconds: float

    def records_per_sec(self) -> float:
        return self.records / self.seconds

    def mib_per_sec(self, record_size: int) -> float:
        return self.records * record_size / self.seconds / 2**20


def _run(main: str, args: list[str], name: str) -> str:
    WORK.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [str(KAFKA_RUN), main, *args], capture_output=True, text=True, timeout=600
    )
    (WORK / f"{name}.log").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"{main} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout


def produce(bootstrap: str, topic: str, records: int, record_size: int, name: str) -> Rate:
    """kafka-producer-perf-test, unthrottled; its summary line gives records/sec."""
    out = _run(
        "org.apache.kafka.tools.ProducerPerformance",
        [
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
        ],
        name,
    )
    summary = re.search(r"^(\d+) records sent, ([\d.]+) records/sec", out, re.MULTILINE)
    if not summary:
        raise RuntimeError(f"Unexpected producer-perf-test output: {out[-500:]}")
    sent, per_sec = int(summary.group(1)), float(summary.group(2))
    log(f"producer-perf-test {topic}@{bootstrap}: {per_sec:,.0f} records/s")
    return Rate(sent, sent / per_sec)


def consume(bootstrap: str, topic: str, records: int, group: str, name: str) -> Rate:
    """kafka-consumer-perf-test over the whole topic. Its fetch.* columns leave out the group
    join, as the engines' copy times leave out their startup."""
    out = _run(
        "org.apache.kafka.tools.ConsumerPerformance",
        [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--group",
            group,
            "--timeout",
            "30000",
        ],
        name,
    )
    lines = [line for line in out.splitlines() if line.strip()]
    header = [c.strip() for c in lines[-2].split(",")]
    values = dict(zip(header, (c.strip() for c in lines[-1].split(",")), strict=True))
    consumed = int(values["data.consumed.in.nMsg"])
    seconds = float(values["fetch.time.ms"]) / 1000
    log(f"consumer-perf-test {topic}@{bootstrap}: {consumed / seconds:,.0f} records/s")
    return Rate(consumed, seconds)
