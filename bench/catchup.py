"""Catch-up copy: an engine copies a preloaded topic; done when the destination ends equal the
source ends on every partition, as read from the clusters themselves."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

from infra.kafka_admin import KafkaAdminError

from . import cluster, procs
from .engine import Engine

POLL_SECONDS = 0.2


@dataclass(frozen=True)
class CopyResult:
    engine: str
    records: int
    bytes: int
    total_seconds: float  # process start to the last record stored
    copy_seconds: float  # first record stored to the last one
    peak_memory: int  # bytes, summed PSS of the process tree
    peak_python: int  # of which in Python processes
    cpu_seconds: float  # during the copy time only: startup (JIT, Spark) left out
    python_cpu_seconds: float  # of which in Python processes
    machine_busy: float  # the share of all the machine's CPU time in use during the copy
    broker_cpu_seconds: float  # both brokers' CPU time during the copy
    micro_batches: int | None  # Isthmus only: how many micro-batches the copy took

    def records_per_sec(self) -> float:
        return self.records / self.copy_seconds

    def mib_per_sec(self) -> float:
        return self.bytes / self.copy_seconds / 2**20


def _busy(before, after) -> float:
    total = sum(after) - sum(before)
    idle = (after.idle + after.iowait) - (before.idle + before.iowait)
    return 1 - idle / total if total > 0 else 0.0


def _cpu(procs: list[psutil.Process]) -> float:
    return sum(t.user + t.system for t in (p.cpu_times() for p in procs))


def run(
    engine: Engine, source_topic: str, partitions: int, record_size: int, timeout: float
) -> CopyResult:
    target = cluster.end_offsets(cluster.SOURCE, source_topic, partitions)
    records = sum(target.values())  # the topic was made fresh, so it starts at offset 0
    mirror = engine.mirror_name(source_topic)
    engine.prepare({mirror: source_topic}, partitions)
    destination = cluster.admin(cluster.DESTINATION)
    brokers = [psutil.Process(pid) for pid in cluster.stack_pids()]
    cluster.log(f"{engine.name}: copying {records:,} records of {source_topic}")
    started = time.monotonic()
    proc = engine.start({mirror: source_topic}, "catchup")
    first = None
    try:
        with procs.TreeSampler(proc.pid) as sampler:
            while True:
                now = time.monotonic()
                try:
                    ends = destination.end_offsets(mirror, partitions)
                except KafkaAdminError:
                    ends = {}
                copied = sum(ends.values())
                if first is None and copied > 0:
                    first = now
                    sampler.sample()
                    cpu_first, python_first = sampler.cpu_seconds, sampler.cpu_of("python")
                    machine_first = psutil.cpu_times()
                    brokers_first = _cpu(brokers)
                if all(ends.get(p, 0) >= end for p, end in target.items()):
                    done = now
                    machine_busy = _busy(machine_first, psutil.cpu_times())
                    broker_cpu = _cpu(brokers) - brokers_first
                    break
                if proc.poll() is not None:
                    raise RuntimeError(f"{engine.name} exited with {proc.returncode}; see its log")
                if now - started > timeout:
                    raise RuntimeError(
                        f"{engine.name} copied {copied:,} of {records:,} records in {timeout:.0f} s"
                    )
                time.sleep(POLL_SECONDS)
            sampler.sample()
            batches = engine.micro_batches()
            if batches is not None:  # the last batch is counted once its write returns
                time.sleep(2 * POLL_SECONDS + 1)
                batches = engine.micro_batches()
    finally:
        engine.stop()
    # A copy that finished within one poll has no measurable start: count one poll interval.
    copy_seconds = max(done - first, POLL_SECONDS)
    result = CopyResult(
        engine.name,
        records,
        records * record_size,
        done - started,
        copy_seconds,
        sampler.peak_memory,
        sampler.peak_python,
        sampler.cpu_seconds - cpu_first,
        sampler.cpu_of("python") - python_first,
        machine_busy,
        broker_cpu,
        batches,
    )
    cluster.log(
        f"{engine.name}: {result.records_per_sec():,.0f} records/s, "
        f"{result.mib_per_sec():.1f} MiB/s, {result.total_seconds:.1f} s from start, "
        f"peak memory (PSS) {result.peak_memory / 2**20:,.0f} MiB"
    )
    return result
