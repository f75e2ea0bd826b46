"""Processes under test: peak memory and CPU time of a process tree, and stopping it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

import psutil


class TreeSampler:
    """Samples a process and all its descendants every `interval` seconds in a thread.

    Peak memory is the largest sum over the tree at one moment of each process's PSS
    (proportional set size): a page shared by several processes is split among them. Summing
    RSS instead would count shared pages once per process, and the Spark JVM forks itself for
    every helper command it runs (Hadoop's local file system calls `readlink` and the like
    while writing the checkpoint), each fork showing the JVM's whole RSS for a moment.
    CPU time is the last seen user+system time of every process that was ever in the tree,
    so workers that exit count.
    """

    def __init__(self, pid: int, interval: float = 0.5):
        self.pid = pid
        self.interval = interval
        self.peak_memory = 0
        self.peak_python = 0  # the Python processes' part of the peak
        self.cpu: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self._lock = threading.Lock()  # sample() runs in the thread and on demand
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def cpu_seconds(self) -> float:
        with self._lock:
            return sum(self.cpu.values())

    def cpu_of(self, name_prefix: str) -> float:
        """CPU seconds of the processes whose name starts with `name_prefix`."""
        with self._lock:
            return sum(t for pid, t in self.cpu.items() if self.names[pid].startswith(name_prefix))

    def sample(self) -> None:
        with self._lock:
            self._sample()

    def _sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        total = python = 0
        for proc in procs:
            try:
                with proc.oneshot():
                    memory = proc.memory_full_info().pss
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                    self.names[proc.pid] = proc.name()
            except psutil.NoSuchProcess:
                continue
            total += memory
            python += memory if self.names[proc.pid].startswith("python") else 0
        if total > self.peak_memory:
            self.peak_memory, self.peak_python = total, python

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)


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
        self.stack = [psutil.Process(pid) for pid in stack_pids]
        self.me = psutil.Process()
        self.machine0 = psutil.cpu_times()
        self.stack0 = self._stack_cpu()
        self.me0 = self._my_cpu()

    def _stack_cpu(self) -> float | None:
        try:
            return sum(t.user + t.system for t in (p.cpu_times() for p in self.stack))
        except psutil.NoSuchProcess:  # a broker restarted: its CPU time cannot be followed
            return None

    def _my_cpu(self) -> float:
        t = self.me.cpu_times()
        return t.user + t.system + t.children_user + t.children_system

    def other(self) -> tuple[float | None, float]:
        """CPU seconds used by everything else, and the machine's total CPU seconds."""
        now = psutil.cpu_times()
        total = sum(now) - sum(self.machine0)
        busy = total - (now.idle + now.iowait - self.machine0.idle - self.machine0.iowait)
        stack = self._stack_cpu()
        if stack is None or self.stack0 is None:
            return None, total
        return busy - (stack - self.stack0) - (self._my_cpu() - self.me0), total
