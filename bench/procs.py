"""Processes under test: CPU time and memory of an engine's whole process tree, and stopping it.

CPU is read from /proc/<pid>/stat: utime + stime + cutime + cstime of every process in the tree.
A child that exits is reaped by its parent (Spark's Python daemon reaps its workers, the JVM the
Python driver, bash its launcher JVM) and the kernel then adds all its time to the parent's
cutime/cstime, so the sum stays counted however short-lived the child and however rarely we
sample. A process reaped by no member of the tree (an orphan reaped by init, or one whose
parent exits in the same interval) is counted with its last-seen time once it is gone.

getrusage(RUSAGE_CHILDREN) after the engine exits (`children_cpu`) is the other way to count,
and the bench reports both for each engine run. For Spark it falls short: when the JVM exits,
the Python daemon and its workers (the copier tasks) are orphaned and reaped by init, so their
time never reaches the bench.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Stat:
    """The fields of /proc/<pid>/stat the bench reads."""

    pid: int
    name: str
    state: str  # "Z" for a zombie: exited, its children already handed to init
    ppid: int
    pgrp: int
    started: int  # clock ticks after boot: with the pid, names a process even if pids recycle
    cpu: float  # seconds: its own user + system time and that of its reaped children
    rss: int  # bytes

    @property
    def key(self) -> tuple[int, int]:
        return self.pid, self.started


def read_stat(pid: int) -> Stat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:  # gone
        return None
    # The name sits in parentheses and may hold spaces or parentheses itself.
    head, _, tail = raw.rpartition(b")")
    name = head.split(b"(", 1)[1].decode(errors="replace")
    f = tail.split()  # f[0] is field 3 (state): field n is f[n - 3]
    ticks = int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime
    return Stat(
        pid, name, f[0].decode(), int(f[1]), int(f[2]), int(f[19]), ticks / TICKS, int(f[21]) * PAGE
    )


def all_stats() -> dict[int, Stat]:
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := read_stat(int(entry))) is not None:
            stats[stat.pid] = stat
    return stats


def tree(root: int, stats: dict[int, Stat]) -> list[Stat]:
    """`root`, its descendants, and anything still in its process group (the engines start
    with `start_new_session`, so an orphaned worker is found by its group)."""
    children: dict[int, list[int]] = {}
    for s in stats.values():
        children.setdefault(s.ppid, []).append(s.pid)
    found, todo = set(), [root] if root in stats else []
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    found |= {s.pid for s in stats.values() if s.pgrp == root}
    return [stats[pid] for pid in sorted(found)]


def pss(pid: int) -> int:
    """Proportional set size in bytes: a page shared by n processes counts 1/n in each."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children_cpu() -> float:
    """User + system seconds of every descendant of this process reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Memory:
    """Peaks of the tree's memory, each the largest sum over the tree at one moment."""

    rss: int = 0  # summed RSS: a page shared by several processes counts in each
    pss: int = 0  # summed PSS: shared pages split among their processes
    python_pss: int = 0  # the Python processes' part of the PSS peak

    def update(self, rss: int, pss: int, python_pss: int) -> None:
        self.rss = max(self.rss, rss)
        if pss > self.pss:
            self.pss, self.python_pss = pss, python_pss


class TreeSampler:
    """Samples a process tree every `interval` seconds in a thread, and on demand.

    `cpu_seconds()` is the tree's CPU time so far (see the module's docstring); the difference
    of two calls is the CPU the engine used between them. `peak` is the memory peak over the
    sampler's life, `window` since the last `new_window()`.
    """

    def __init__(self, pid: int, interval: float = 0.25):
        self.pid = pid
        self.interval = interval
        self.peak = Memory()
        self.window = Memory()
        self.last: dict[tuple[int, int], Stat] = {}
        self.departed = 0.0  # seconds of orphans that exited: no parent of ours got them
        self.total = 0.0
        # Of which in processes named python* at the last sample (a process that exits moves
        # its time into its parent, which may not be Python: exact while the processes live).
        self.python = 0.0
        self._lock = threading.Lock()  # the thread and callers both sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        self.sample(memory=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_seconds(self) -> float:
        self.sample()
        return self.total

    def new_window(self) -> None:
        with self._lock:
            self.window = Memory()

    def window_peak(self) -> Memory:
        with self._lock:
            return dataclasses.replace(self.window)

    def sample(self, memory: bool = False) -> None:
        with self._lock:
            self._sample(memory)

    def _sample(self, memory: bool) -> None:
        members = tree(self.pid, all_stats())
        now = {s.key: s for s in members}
        alive = {s.pid for s in members if s.state != "Z"}
        for key, gone in self.last.items():
            # Gone from /proc means reaped. By a parent still running in the tree: its time is
            # in that parent's cutime now. Otherwise (an orphan reaped by init, its parent a
            # zombie or gone as well) nothing of ours holds it: keep its last-seen time.
            if key not in now and gone.ppid not in alive:
                self.departed += gone.cpu
        self.last = now
        self.total = self.departed + sum(s.cpu for s in members)
        self.python = sum(s.cpu for s in members if s.name.startswith("python"))
        if memory and members:
            sizes = [(s, pss(s.pid)) for s in members]
            rss = sum(s.rss for s in members)
            total = sum(size for _, size in sizes)
            python = sum(size for s, size in sizes if s.name.startswith("python"))
            self.peak.update(rss, total, python)
            self.window.update(rss, total, python)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample(memory=True)


def cpu_of(pids: list[int]) -> float | None:
    """User + system seconds of these processes (the brokers); None if one is gone."""
    try:
        return sum(t.user + t.system for t in (psutil.Process(p).cpu_times() for p in pids))
    except psutil.NoSuchProcess:
        return None


def used(before: float | None, after: float | None) -> float | None:
    """CPU seconds between two `cpu_of` readings; None if a process was gone at either."""
    return None if before is None or after is None else after - before


def busy(before, after) -> float:
    """The share of all the machine's CPU time in use between two `psutil.cpu_times()`."""
    total = sum(after) - sum(before)
    idle = (after.idle + after.iowait) - (before.idle + before.iowait)
    return 1 - idle / total if total > 0 else 0.0


def stop_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM the process group started with `start_new_session`, then SIGKILL after `grace`."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    # Children (Spark's Python workers) may outlive the leader for a moment: reap the group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def wait_exit(proc: subprocess.Popen, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return True
        time.sleep(0.2)
    return False


class Quietness:
    """How much CPU the rest of the machine used during the run: all busy CPU time minus this
    process and its (reaped) descendants, the two brokers and Redis. Kernel work for the
    network and disk counts as "other" too, so a quiet run shows a few percent, not zero."""

    def __init__(self, stack_pids: list[int]):
        self.stack = stack_pids
        self.machine0 = psutil.cpu_times()
        self.stack0 = cpu_of(self.stack)
        self.me0 = self._my_cpu()

    @staticmethod
    def _my_cpu() -> float:
        t = psutil.Process().cpu_times()
        return t.user + t.system + t.children_user + t.children_system

    def other(self) -> tuple[float | None, float]:
        """CPU seconds used by everything else, and the machine's total CPU seconds."""
        now = psutil.cpu_times()
        total = sum(now) - sum(self.machine0)
        busy = total - (now.idle + now.iowait - self.machine0.idle - self.machine0.iowait)
        stack = cpu_of(self.stack)
        if stack is None or self.stack0 is None:  # a broker restarted: cannot be followed
            return None, total
        return busy - (stack - self.stack0) - (self._my_cpu() - self.me0), total
