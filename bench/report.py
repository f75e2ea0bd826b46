"""The results of a run: the tables printed to stdout and written into docs/benchmarks.md, the
ratios, and each target met or missed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import subprocess
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import confluent_kafka
import psutil
import pyspark

from spark_jobs import launch

from .catchup import CopyResult
from .cluster import ROOT
from .latency import LatencyResult, LatencyRun
from .perf import Limit
from .procs import Memory

ISTHMUS, MM2 = "Isthmus", "MirrorMaker 2"
GIB = 2**30


@dataclass
class Results:
    started: str  # local time the run began
    wall_seconds: float
    load_before: tuple[float, float, float]
    record_size: int
    partitions: int
    records: int  # of the catch-up
    clients: int  # perf tools run in parallel: as many as the copy's tasks
    preload: Limit
    consumer_limit: Limit
    producer_limits: list[Limit]  # producer-perf-test, then confluent-kafka producers
    copies: list[CopyResult]  # the catch-up, one per engine
    many_topics: int
    many_partitions: int
    many: list[CopyResult]  # the many-partition copy, one per engine
    latencies: list[LatencyRun]  # direct, then one per engine
    rates: list[int]
    latency_warmup: float
    latency_measure: float
    idle_seconds: float
    add_records: int  # in the source topic of the mirror added to a running engine
    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    note: str = ""
    engine_version: str = "?"
    other_cpu: float | None = None  # CPU seconds used by processes outside the bench and stack
    machine_cpu: float = 0.0  # the machine's CPU seconds over the run (cores × wall time)

    def engines(self) -> list[str]:
        return [c.engine for c in self.copies]

    def both(self) -> bool:
        return {ISTHMUS, MM2} <= set(self.engines())

    def copy(self, engine: str) -> CopyResult:
        return next(c for c in self.copies if c.engine == engine)

    def many_copy(self, engine: str) -> CopyResult:
        return next(c for c in self.many if c.engine == engine)

    def latency(self, engine: str) -> LatencyRun:
        return next(r for r in self.latencies if r.engine == engine)

    def window(self, engine: str, rate: int) -> LatencyResult:
        return next(w for w in self.latency(engine).windows if w.rate == rate)

    def producer_limit(self) -> Limit:
        """The fastest producers: the most this machine and destination took."""
        return max(self.producer_limits, key=Limit.records_per_sec)

    def limit_records_per_sec(self) -> float:
        """A copy reads and writes every record, so it cannot beat the slower of the two."""
        return min(self.consumer_limit.records_per_sec(), self.producer_limit().records_per_sec())

    def peak(self, engine: str) -> Memory:
        """The engine's memory peaks over all its runs (catch-up, many partitions, latency)."""
        runs = [x.peak for x in [*self.copies, *self.many] if x.engine == engine]
        runs += [x.peak for x in self.latencies if x.engine == engine and x.peak]
        peak = Memory()
        for m in runs:
            peak.update(m.rss, m.pss, m.python_pss)
        return peak

    def quietness(self) -> str:
        if self.other_cpu is None:
            return "A broker restarted during the run, so other processes' CPU use is unknown."
        return (
            f"Processes other than the bench, its engines, the two brokers and Redis used at "
            f"most {self.other_cpu:,.0f} CPU seconds during the run, "
            f"{self.other_cpu / self.machine_cpu:.1%} of the machine's CPU time (an upper "
            f"bound: it includes the kernel's own work)."
        )


def load(path: Path) -> Results:
    """Results as a run saved them (var/bench/results.json), to write the document again."""
    return _build(Results, json.loads(path.read_text()))


def _build(cls: type, data: dict):
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _value(hints[f.name], data[f.name]) for f in dataclasses.fields(cls)})


def _value(hint, value):
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):  # X | None
        return _value(next(a for a in args if a is not type(None)), value)
    if origin is list:
        return [_value(args[0], v) for v in value]
    if origin is tuple:
        return tuple(value)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value)
    return value


# --- formatting -----------------------------------------------------------------------------


def mib(n: float | None) -> str:
    return "–" if n is None else f"{n / 2**20:,.0f} MiB"


def seconds(s: float | None, digits: int = 1) -> str:
    return "–" if s is None else f"{s:,.{digits}f} s"


def share(part: float | None, whole: float) -> str:
    return "–" if part is None or whole <= 0 else f"{part / whole:.1%}"


def table(header: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = [header, align, *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def per_gib(cpu: float | None, size: float) -> str:
    return "–" if cpu is None else f"{cpu / (size / GIB):,.1f}"


# --- tables ---------------------------------------------------------------------------------


def throughput_table(r: Results) -> str:
    size = r.records * r.record_size
    rows = []
    c = r.consumer_limit
    rows.append(
        [
            f"raw limit: {c.clients} × consumer-perf-test on the source, each reading it all",
            f"{c.records_per_sec():,.0f}",
            f"{c.mib_per_sec(r.record_size):,.1f}",
            "–",
            "–",
            "–",
            "–",
        ]
    )
    for p in r.producer_limits:
        rows.append(
            [
                f"raw limit: {p.clients} × {p.tool} on the destination",
                f"{p.records_per_sec():,.0f}",
                f"{p.mib_per_sec(r.record_size):,.1f}",
                seconds(p.seconds),
                f"{per_gib(p.client_cpu_seconds, size)} (the producers)",
                per_gib(p.broker_cpu_seconds, size),
                f"{p.machine_busy:.0%}",
            ]
        )
    for x in r.copies:
        rows.append(
            [*_copy_cells(x), per_gib(x.broker_cpu_seconds, x.bytes), f"{x.machine_busy:.0%}"]
        )
    header = [
        "",
        "records/s",
        "MiB/s",
        "copy time",
        "CPU s per GiB",
        "brokers' CPU s per GiB",
        "machine busy",
    ]
    return table(header, rows)


def _copy_cells(x) -> list[str]:
    """An engine's copy: who, records/s, MiB/s, how long, its CPU per GiB."""
    return [
        x.engine,
        f"{x.records_per_sec():,.0f}",
        f"{x.mib_per_sec():,.1f}",
        seconds(x.copy_seconds),
        per_gib(x.cpu_seconds, x.bytes),
    ]


def many_table(r: Results) -> str:
    rows = [
        [*_copy_cells(x), f"{x.machine_busy:.0%}", seconds(x.cold_start_seconds())] for x in r.many
    ]
    header = [
        "",
        "records/s",
        "MiB/s",
        "copy time",
        "CPU s per GiB",
        "machine busy",
        "mirror creation → first record",
    ]
    return table(header, rows)


def startup_table(r: Results) -> str:
    rows = []
    for x in r.copies:
        add = x.add.total_seconds() if x.add else None
        rows.append(
            [
                x.engine,
                seconds(x.cold_start_seconds()),
                seconds(x.startup_seconds),
                seconds(x.startup_cpu_seconds),
                seconds(r.latency(x.engine).first_record_seconds),
                seconds(add, 2)
                if x.add
                else ("not measured" if x.engine != ISTHMUS else "nothing in 60 s"),
            ]
        )
    header = [
        "",
        "cold start: mirror creation → first record",
        "of which process start → first record",
        "CPU s until then",
        "process start → first record in the latency run (under load)",
        "mirror added to the running engine → first record",
    ]
    return table(header, rows)


def idle_table(r: Results) -> str:
    rows = []
    for x in r.copies:
        if x.idle is None:
            continue
        i = x.idle
        rows.append(
            [
                x.engine,
                seconds(i.cpu_seconds, 2),
                f"{i.core_share():.2%}",
                share(i.broker_cpu_seconds, i.seconds),
            ]
        )
    header = [
        "",
        f"engine CPU over {r.idle_seconds:.0f} s idle",
        "of one core",
        "both brokers meanwhile, of one core",
    ]
    return table(header, rows)


def latency_table(r: Results) -> str:
    rows = []
    for rate in r.rates:
        for run in r.latencies:
            w = next(w for w in run.windows if w.rate == rate)
            received = f"{w.received:,}" + ("" if w.received == w.sent else f" of {w.sent:,}")
            rows.append(
                [
                    f"{rate:,}",
                    run.engine,
                    f"{w.p50_ms:,.0f} ms",
                    f"{w.p99_ms:,.0f} ms",
                    f"{w.max_ms:,.0f} ms",
                    received,
                    share(w.cpu_seconds, w.seconds),
                    mib(w.peak.rss if w.peak else None),
                ]
            )
    header = [
        "records/s",
        "",
        "p50",
        "p99",
        "max",
        "records measured",
        "engine CPU, of one core",
        "peak memory (RSS)",
    ]
    return table(header, rows, right_from=2)


def memory_table(r: Results) -> str:
    def cell(m: Memory | None) -> str:
        return "–" if m is None else f"{mib(m.rss)} ({mib(m.pss)})"

    def run_of(runs: list, engine: str) -> Memory | None:
        return next((x.peak for x in runs if x.engine == engine), None)

    rows = [
        [
            e,
            cell(run_of(r.copies, e)),
            cell(run_of(r.many, e)),
            cell(run_of(r.latencies, e)),
            cell(r.peak(e)),
        ]
        for e in r.engines()
    ]
    header = [
        "",
        "catch-up run (copy, idle, mirror added)",
        f"{r.many_topics} topics run",
        "latency run",
        "peak over the run",
    ]
    return table(header, rows)


def cpu_check_table(r: Results) -> str:
    rows = [
        [
            f"{x.engine}, {x.case}",
            seconds(x.run_cpu_sampled),
            seconds(x.run_cpu_rusage),
            f"{x.run_cpu_sampled / x.run_cpu_rusage - 1:+.1%}" if x.run_cpu_rusage else "–",
        ]
        for x in [*r.copies, *r.many]
    ]
    header = [
        "engine run",
        "CPU, /proc samples",
        "CPU, getrusage after exit",
        "difference",
    ]
    return table(header, rows)


# --- ratios and targets ---------------------------------------------------------------------


def ratios(r: Results) -> dict[str, float]:
    if not r.both():
        return {}
    i, m = r.copy(ISTHMUS), r.copy(MM2)
    out = {
        "Isthmus / MirrorMaker 2, catch-up records/s": i.records_per_sec() / m.records_per_sec(),
        "Isthmus / MirrorMaker 2, catch-up CPU s per GiB": i.cpu_per_gib() / m.cpu_per_gib(),
        f"Isthmus / MirrorMaker 2, {r.many_topics} topics × {r.many_partitions} partitions "
        "records/s": r.many_copy(ISTHMUS).records_per_sec() / r.many_copy(MM2).records_per_sec(),
        "Isthmus / raw limit, catch-up records/s": i.records_per_sec() / r.limit_records_per_sec(),
        "MirrorMaker 2 / raw limit, catch-up records/s": m.records_per_sec()
        / r.limit_records_per_sec(),
    }
    for rate in r.rates:
        wi, wm = r.window(ISTHMUS, rate), r.window(MM2, rate)
        out[f"Isthmus / MirrorMaker 2, p50 at {rate:,} records/s"] = wi.p50_ms / wm.p50_ms
        out[f"Isthmus / MirrorMaker 2, p99 at {rate:,} records/s"] = wi.p99_ms / wm.p99_ms
    if i.idle and m.idle and m.idle.cpu_seconds > 0:
        out["Isthmus / MirrorMaker 2, idle CPU"] = i.idle.cpu_seconds / m.idle.cpu_seconds
    out["Isthmus / MirrorMaker 2, peak memory (RSS) over the run"] = (
        r.peak(ISTHMUS).rss / r.peak(MM2).rss
    )
    return out


def ratio_lines(r: Results) -> list[str]:
    return [f"{name}: {value:.2f}×" for name, value in ratios(r).items()]


@dataclass(frozen=True)
class Target:
    what: str
    value: float | None  # None: not measured (or nothing happened in time)
    goal: float
    higher_is_better: bool
    fmt: Callable[[float], str]

    def met(self) -> bool | None:
        if self.value is None:
            return None
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal

    def line(self) -> str:
        if self.value is None:
            return f"{self.what}: **missed**, nothing measured (see above)."
        if self.met():
            return f"{self.what}: **met** ({self.fmt(self.value)})."
        gap = abs(self.goal - self.value)
        side = "short of" if self.higher_is_better else "over"
        return (
            f"{self.what}: **missed**: {self.fmt(self.value)}, {self.fmt(gap)} "
            f"({gap / self.goal:.0%}) {side} the target."
        )


def targets(r: Results) -> list[Target]:
    if not r.both():
        return []
    i, m = r.copy(ISTHMUS), r.copy(MM2)

    def times(x: float) -> str:
        return f"{x:.2f}×"

    def ms(x: float) -> str:
        return f"{x:,.0f} ms"

    def secs(x: float) -> str:
        return f"{x:.2f} s"

    out = [
        Target(
            "Catch-up records/s ≥ 2.5× MirrorMaker 2's",
            i.records_per_sec() / m.records_per_sec(),
            2.5,
            True,
            times,
        ),
        Target(
            "Catch-up records/s ≥ 0.8× the raw client limit",
            i.records_per_sec() / r.limit_records_per_sec(),
            0.8,
            True,
            times,
        ),
        Target(
            f"Catch-up CPU s per GiB below MirrorMaker 2's ({m.cpu_per_gib():.1f})",
            i.cpu_per_gib(),
            m.cpu_per_gib(),
            False,
            lambda x: f"{x:.1f} CPU s/GiB",
        ),
        Target(
            f"{r.many_topics} topics × {r.many_partitions} partitions records/s ≥ 2.0× "
            "MirrorMaker 2's",
            r.many_copy(ISTHMUS).records_per_sec() / r.many_copy(MM2).records_per_sec(),
            2.0,
            True,
            times,
        ),
    ]
    for rate in r.rates:
        wi, wm = r.window(ISTHMUS, rate), r.window(MM2, rate)
        out.append(Target(f"p50 at {rate:,} records/s ≤ 10 ms", wi.p50_ms, 10.0, False, ms))
        out.append(
            Target(
                f"p99 at {rate:,} records/s ≤ 0.8× MirrorMaker 2's ({wm.p99_ms:,.0f} ms)",
                wi.p99_ms,
                0.8 * wm.p99_ms,
                False,
                ms,
            )
        )
    out += [
        Target(
            f"Idle link ({r.idle_seconds:.0f} s without new records) ≤ 1 % of one core",
            i.idle.core_share() if i.idle else None,
            0.01,
            False,
            lambda x: f"{x:.2%}",
        ),
        Target(
            "Mirror added to the running engine → first record ≤ 3 s",
            i.add.total_seconds() if i.add else None,
            3.0,
            False,
            secs,
        ),
        Target(
            f"Cold start: engine start → first record ≤ MirrorMaker 2's "
            f"({r.copy(MM2).cold_start_seconds() or 0:.2f} s)",
            i.cold_start_seconds(),
            r.copy(MM2).cold_start_seconds(),
            False,
            secs,
        ),
        Target(
            f"Peak memory (summed RSS) over the run ≤ MirrorMaker 2's ({mib(r.peak(MM2).rss)})",
            r.peak(ISTHMUS).rss,
            r.peak(MM2).rss,
            False,
            mib,
        ),
    ]
    return out


def print_summary(r: Results) -> None:
    sections = [
        (
            f"Catch-up copy of {r.records:,} records of {r.record_size} B over {r.partitions} "
            "partitions",
            throughput_table(r),
        ),
        (
            f"{r.many_topics} topics × {r.many_partitions} partitions on one link",
            many_table(r) if r.many else "",
        ),
        ("Startup and adding a mirror", startup_table(r)),
        ("Idle", idle_table(r)),
        ("Replication latency", latency_table(r)),
        ("Peak memory, summed RSS (PSS)", memory_table(r)),
        ("CPU over each engine run, two ways", cpu_check_table(r)),
    ]
    for title, body in sections:
        print(f"\n{title}\n{body}")
    print()
    for line in ratio_lines(r):
        print(line)
    for target in targets(r):
        print(target.line().replace("**", ""))
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
    """The commit of the engine's code, and any uncommitted change to it, as benchmarked."""
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
    """A digest of the engine's code, to tell whether it changed while the bench ran."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in launch.code_files())).hexdigest()[:12]


def versions(r: Results) -> dict[str, str]:
    return {
        "Isthmus data plane (`spark_jobs/`)": r.engine_version,
        "Apache Kafka (brokers, perf tools, MirrorMaker 2)": _jar_version("kafka", "kafka-clients"),
        "Spark / PySpark": pyspark.__version__,
        "confluent-kafka (librdkafka)": f"{version('confluent-kafka')} "
        f"({confluent_kafka.libversion()[0]})",
    }
