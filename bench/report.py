"""The results of a run: the tables printed to stdout and docs/benchmarks.md."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import confluent_kafka
import psutil
import pyspark

from spark_jobs import launch

from .catchup import CopyResult
from .cluster import ROOT
from .latency import LatencyResult
from .perf import Rate


@dataclass
class Results:
    started: str  # local time the run began
    wall_seconds: float
    load_before: tuple[float, float, float]
    record_size: int
    partitions: int
    records: int
    preload: Rate
    consumer_limit: Rate
    producer_limit: Rate
    copies: list[CopyResult]
    latencies: list[LatencyResult]
    latency_rate: int
    latency_warmup: float
    note: str = ""
    engine_version: str = "?"
    other_cpu: float | None = None  # CPU seconds used by processes outside the bench and stack
    machine_cpu: float = 0.0  # the machine's CPU seconds over the run (cores × wall time)

    def quietness(self) -> str:
        if self.other_cpu is None:
            return "A broker restarted during the run, so other processes' CPU use is unknown."
        return (
            f"Processes other than the bench, its engines, the two brokers and Redis used at "
            f"most {self.other_cpu:,.0f} CPU seconds during the run, "
            f"{self.other_cpu / self.machine_cpu:.1%} of the machine's CPU time (an upper "
            f"bound: it includes the kernel's own work)."
        )

    settings: dict[str, dict[str, str]] = field(default_factory=dict)

    def copy(self, engine: str) -> CopyResult:
        return next(c for c in self.copies if c.engine == engine)

    def latency(self, engine: str) -> LatencyResult:
        return next(r for r in self.latencies if r.engine == engine)

    def limit_records_per_sec(self) -> float:
        """A copy reads and writes every record, so it cannot beat the slower of the two."""
        return min(self.consumer_limit.records_per_sec(), self.producer_limit.records_per_sec())


def _mib(n: int | None) -> str:
    return "–" if n is None else f"{n / 2**20:,.0f} MiB"


def throughput_table(r: Results) -> str:
    rows = [
        "| | records/s | MiB/s | copy time | from process start | peak memory (PSS) "
        "| CPU in copy time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, rate in (
        ("raw limit: consumer-perf-test on the source", r.consumer_limit),
        ("raw limit: producer-perf-test on the destination", r.producer_limit),
    ):
        rows.append(
            f"| {label} | {rate.records_per_sec():,.0f} | {rate.mib_per_sec(r.record_size):,.1f} "
            f"| {rate.seconds:.1f} s | – | – | – |"
        )
    for c in r.copies:
        rows.append(
            f"| {c.engine} | {c.records_per_sec():,.0f} | {c.mib_per_sec():,.1f} "
            f"| {c.copy_seconds:.1f} s | {c.total_seconds:.1f} s | {_mib(c.peak_memory)} "
            f"| {c.cpu_seconds:.0f} s |"
        )
    return "\n".join(rows)


def latency_table(r: Results) -> str:
    rows = [
        "| | p50 | p99 | max | records measured | peak memory (PSS) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for x in r.latencies:
        received = f"{x.received:,}" + ("" if x.received == x.sent else f" of {x.sent:,}")
        rows.append(
            f"| {x.engine} | {x.p50_ms:,.0f} ms | {x.p99_ms:,.0f} ms | {x.max_ms:,.0f} ms "
            f"| {received} | {_mib(x.peak_memory)} |"
        )
    return "\n".join(rows)


def ratios(r: Results) -> dict[str, float]:
    isthmus, mm2 = r.copy("Isthmus"), r.copy("MirrorMaker 2")
    lat_i, lat_m = r.latency("Isthmus"), r.latency("MirrorMaker 2")
    return {
        "Isthmus / MirrorMaker 2, catch-up throughput": isthmus.records_per_sec()
        / mm2.records_per_sec(),
        "Isthmus / raw client limit, catch-up throughput": isthmus.records_per_sec()
        / r.limit_records_per_sec(),
        "MirrorMaker 2 / raw client limit, catch-up throughput": mm2.records_per_sec()
        / r.limit_records_per_sec(),
        "Isthmus / MirrorMaker 2, p50 latency": lat_i.p50_ms / lat_m.p50_ms,
        "Isthmus / MirrorMaker 2, p99 latency": lat_i.p99_ms / lat_m.p99_ms,
        "Isthmus / MirrorMaker 2, peak memory during catch-up": isthmus.peak_memory
        / mm2.peak_memory,
        f"Isthmus / MirrorMaker 2, peak memory at {r.latency_rate:,} records/s": lat_i.peak_memory
        / lat_m.peak_memory,
    }


def ratio_lines(r: Results) -> list[str]:
    return [f"{name}: {value:.2f}×" for name, value in ratios(r).items()]


def print_summary(r: Results) -> None:
    print()
    print(
        f"Catch-up copy of {r.records:,} records of {r.record_size} B over {r.partitions} "
        "partitions"
    )
    print(throughput_table(r))
    print()
    print(f"Replication latency at {r.latency_rate:,} records/s")
    print(latency_table(r))
    print()
    batches = r.latency("Isthmus").micro_batches
    if batches:
        print(f"Isthmus wrote {batches} micro-batches in the {r.latencies[0].seconds:.0f} s window")
    for line in ratio_lines(r):
        print(line)
    print(f"\nTotal wall time: {r.wall_seconds / 60:.1f} min. {r.quietness()}")


# --- the machine and the versions ----------------------------------------------------------


def _first_line(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except OSError:
        return "?"
    return (out.stderr or out.stdout).strip().splitlines()[0]


def _jar_version(folder: str, prefix: str) -> str:
    jars = sorted((ROOT / ".cache" / "jars" / folder).glob(f"{prefix}-*.jar"))
    return jars[0].stem.removeprefix(f"{prefix}-") if jars else "?"


def machine() -> dict[str, str]:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    os_name = platform.platform()
    release = Path("/etc/os-release")
    if release.exists():
        for line in release.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = f"{line.split('=', 1)[1].strip(chr(34))}, Linux {platform.release()}"
    return {
        "CPU": f"{os.cpu_count()} × {cpu}",
        "RAM": f"{psutil.virtual_memory().total / 2**30:.0f} GiB",
        "OS": os_name,
        "Python": platform.python_version(),
        "Java": _first_line(["java", "-version"]),
    }


def engine_version() -> str:
    """The commit of the stream's code, and any uncommitted change to it, as benchmarked."""
    git = ["git", "-C", str(ROOT)]
    try:
        commit = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--", *launch.CODE],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "?"
    files = sorted(line[3:] for line in changed if line.strip())
    return f"commit {commit}" + (
        f", with uncommitted changes to {', '.join(files)}" if files else ""
    )


def engine_digest() -> str:
    """A digest of the stream's code, to tell whether it changed while the bench ran."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in launch.code_files())).hexdigest()[:12]


def versions(r: Results) -> dict[str, str]:
    return {
        "Isthmus link stream (`spark_jobs/`)": r.engine_version,
        "Apache Kafka (brokers, perf tools, MirrorMaker 2)": _jar_version("kafka", "kafka-clients"),
        "Spark / PySpark": pyspark.__version__,
        "Spark Kafka connector": _jar_version("spark", "spark-sql-kafka-0-10_2.13")
        + f" (kafka-clients {_jar_version('spark', 'kafka-clients')})",
        "confluent-kafka (librdkafka)": f"{version('confluent-kafka')} "
        f"({confluent_kafka.libversion()[0]})",
    }
