"""One run of an engine over preloaded topics: the catch-up copy (done when the destination ends
equal the source ends on every partition, as read from the clusters themselves), then optionally
an idle window and the addition of a mirror to the running engine, then its stop."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

import psutil

from infra.kafka_errors import KafkaAdminError

from . import cluster, procs
from .engine import Engine

POLL_SECONDS = 0.1
SETTLE_SECONDS = 5.0  # after the copy, before the idle window: the copy's tail (acks, commits)
ADD_POLL_SECONDS = 0.05
ADD_TIMEOUT = 60.0


@dataclass(frozen=True)
class Idle:
    """The engine's CPU while its mirrors get no new record."""

    seconds: float
    cpu_seconds: float
    broker_cpu_seconds: float | None  # both brokers meanwhile (the engine's fetches included)

    def core_share(self) -> float:
        return self.cpu_seconds / self.seconds


@dataclass(frozen=True)
class MirrorAdd:
    """A mirror added to the running engine: its topic made, then the new mirror set."""

    create_seconds: float  # the mirror topic made on the destination
    first_record_seconds: float | None  # mirror set published -> its first record copied

    def total_seconds(self) -> float | None:
        if self.first_record_seconds is None:
            return None
        return self.create_seconds + self.first_record_seconds


@dataclass(frozen=True)
class CopyResult:
    engine: str
    case: str  # "catch-up" or "many"
    topics: int
    partitions: int  # of each topic
    records: int
    bytes: int
    prepare_seconds: float  # the destination topics made
    startup_seconds: float  # process start to the first record on the destination
    copy_seconds: float  # first record on the destination to the last (see _copy)
    cpu_seconds: float  # the engine's processes, during the copy time only
    python_cpu_seconds: float  # of which in Python processes
    startup_cpu_seconds: float  # process start to the first record
    machine_busy: float  # the share of all the machine's CPU time in use during the copy
    broker_cpu_seconds: float | None  # both brokers' CPU time during the copy
    peak: procs.Memory  # over the engine's whole run, from its start to its exit
    run_cpu_sampled: float  # the engine's CPU over its whole run, from /proc samples
    run_cpu_rusage: float  # the same, from getrusage once it exited and was reaped
    idle: Idle | None = None
    add: MirrorAdd | None = None

    def records_per_sec(self) -> float:
        return self.records / self.copy_seconds

    def mib_per_sec(self) -> float:
        return self.bytes / self.copy_seconds / 2**20

    def cold_start_seconds(self) -> float:
        """Mirror creation (its topics made, the engine started) to its first record."""
        return self.prepare_seconds + self.startup_seconds

    def cpu_per_gib(self) -> float:
        return self.cpu_seconds / (self.bytes / 2**30)


@dataclass(frozen=True)
class _Copy:
    startup: float
    seconds: float
    cpu: float
    python_cpu: float
    startup_cpu: float
    busy: float
    broker_cpu: float | None


@dataclass(frozen=True)
class _Look:
    """What the engine, the brokers and the machine had used when a look at the copy began."""

    at: float
    cpu: float
    python: float
    machine: tuple
    brokers: float | None

    @classmethod
    def now(cls, sampler: procs.TreeSampler, brokers: list[int]) -> _Look:
        at, cpu = time.monotonic(), sampler.cpu_seconds()
        return cls(at, cpu, sampler.python, psutil.cpu_times(), procs.cpu_of(brokers))


def _check(engine: Engine, proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"{engine.name} exited with {proc.returncode}; see its log")
    if error := engine.error():
        raise RuntimeError(f"{engine.name} failed: {error}")


def _copy(
    engine: Engine,
    proc: subprocess.Popen,
    sampler: procs.TreeSampler,
    want: dict[tuple[str, int], int],
    started: float,
    timeout: float,
) -> _Copy:
    """Wait until every destination partition in `want` is copied to its source's end. The copy
    is timed from the last look that saw nothing copied (a look that failed must not hide the
    copy's start) to the answer of the look that saw the last (the copy may have ended while
    it was asked): a slow or failed look makes a copy look slower, never faster."""
    brokers = cluster.stack_pids()
    total = sum(want.values())
    empty = _Look.now(sampler, brokers)
    first = None
    while True:
        look = _Look.now(sampler, brokers)
        ends = engine.copied(list(want))
        copied = sum(ends.values())
        if first is None and ends and copied == 0:
            empty = look
        elif first is None and copied > 0:
            first = empty
        if first is not None and all(ends.get(k, 0) >= end for k, end in want.items()):
            done = _Look.now(sampler, brokers)
            return _Copy(
                startup=first.at - started,
                # A copy done within one look has no measurable span: count one interval.
                seconds=max(done.at - first.at, POLL_SECONDS),
                cpu=done.cpu - first.cpu,
                python_cpu=done.python - first.python,
                startup_cpu=first.cpu,
                busy=procs.busy(first.machine, done.machine),
                broker_cpu=procs.used(first.brokers, done.brokers),
            )
        _check(engine, proc)
        if look.at - started > timeout:
            raise RuntimeError(
                f"{engine.name} copied {copied:,} of {total:,} records in {timeout:.0f} s"
            )
        time.sleep(POLL_SECONDS)


def _idle(
    engine: Engine, proc: subprocess.Popen, sampler: procs.TreeSampler, seconds: float
) -> Idle:
    """The engine's CPU over `seconds` with nothing new to copy. The bench itself stays quiet
    meanwhile (no admin calls), so the brokers' CPU is the engine's idle fetching and theirs."""
    time.sleep(SETTLE_SECONDS)
    _check(engine, proc)
    brokers = cluster.stack_pids()
    cluster.log(f"{engine.name}: idle for {seconds:.0f} s")
    began, cpu0, brokers0 = time.monotonic(), sampler.cpu_seconds(), procs.cpu_of(brokers)
    while (left := began + seconds - time.monotonic()) > 0:
        time.sleep(min(left, 1.0))
        if proc.poll() is not None:
            _check(engine, proc)
    cpu1, brokers1, ended = sampler.cpu_seconds(), procs.cpu_of(brokers), time.monotonic()
    idle = Idle(
        ended - began,
        cpu1 - cpu0,
        procs.used(brokers0, brokers1),
    )
    cluster.log(f"{engine.name}: idle CPU {idle.core_share():.2%} of one core")
    return idle


def _add(engine: Engine, proc: subprocess.Popen, source: str, partitions: int) -> MirrorAdd:
    """Add a mirror of `source` (which holds records already) to the running engine, as the
    console does: its topic first, then the new mirror set; time until its first record."""
    mirror = engine.mirror_name(source)
    began = time.monotonic()
    engine.prepare({mirror: source}, partitions)
    published = time.monotonic()
    engine.add_mirrors({mirror: source})
    destination = cluster.admin(cluster.DESTINATION)
    keys = [(mirror, p) for p in range(partitions)]
    while time.monotonic() - published < ADD_TIMEOUT:
        try:
            copied = sum(destination.offsets(keys).values())
        except KafkaAdminError:
            copied = 0
        if copied > 0:
            added = MirrorAdd(published - began, time.monotonic() - published)
            cluster.log(
                f"{engine.name}: added mirror's first record {added.first_record_seconds:.2f} s "
                f"after the new mirror set ({added.total_seconds():.2f} s with its topic)"
            )
            return added
        _check(engine, proc)
        time.sleep(ADD_POLL_SECONDS)
    cluster.log(f"{engine.name}: no record of the added mirror within {ADD_TIMEOUT:.0f} s")
    return MirrorAdd(published - began, None)


def run(
    engine: Engine,
    case: str,
    sources: list[str],
    partitions: int,
    record_size: int,
    timeout: float,
    idle: float = 0.0,
    add_source: str | None = None,
) -> CopyResult:
    """Copy `sources` (fresh topics of `partitions` each, preloaded); then, if asked, stay idle
    `idle` seconds and add a mirror of `add_source` (an engine that can); then stop."""
    target = cluster.end_offsets(cluster.SOURCE, {s: partitions for s in sources})
    records = sum(target.values())  # the topics were made fresh, so they start at offset 0
    want = {(engine.mirror_name(t), p): end for (t, p), end in target.items()}
    mirrors = {engine.mirror_name(s): s for s in sources}
    began = time.monotonic()
    engine.prepare(mirrors, partitions)
    prepared = time.monotonic()
    cluster.log(f"{engine.name}: copying {records:,} records of {len(sources)} topic(s)")
    cpu_before = procs.children_cpu()
    proc = engine.start(mirrors, case)
    started = time.monotonic()
    try:
        with procs.TreeSampler(proc.pid) as sampler:
            copy = _copy(engine, proc, sampler, want, started, timeout)
            cluster.log(
                f"{engine.name}: {records / copy.seconds:,.0f} records/s, first record "
                f"{copy.startup:.1f} s after its start, {copy.cpu:.1f} CPU s in the copy"
            )
            idled = _idle(engine, proc, sampler, idle) if idle > 0 else None
            added = None
            if add_source and engine.adds_mirrors_live:
                added = _add(engine, proc, add_source, partitions)
            engine.stop()  # inside the sampler: its shutdown counts in the run's CPU
            run_sampled = sampler.cpu_seconds()
    except BaseException:
        engine.stop()
        raise
    return CopyResult(
        engine=engine.name,
        case=case,
        topics=len(sources),
        partitions=partitions,
        records=records,
        bytes=records * record_size,
        prepare_seconds=prepared - began,
        startup_seconds=copy.startup,
        copy_seconds=copy.seconds,
        cpu_seconds=copy.cpu,
        python_cpu_seconds=copy.python_cpu,
        startup_cpu_seconds=copy.startup_cpu,
        machine_busy=copy.busy,
        broker_cpu_seconds=copy.broker_cpu,
        peak=sampler.peak,
        run_cpu_sampled=run_sampled,
        run_cpu_rusage=procs.children_cpu() - cpu_before,
        idle=idled,
        add=added,
    )
