"""Start, find and stop the devstack's background processes by pid.

Each started process gets a pid file holding its pid and start time, so `down` stops exactly
what `up` started and never a later process that happens to reuse the pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil


class PortInUse(RuntimeError):
    """A port the devstack needs is held by something else."""


@dataclass(frozen=True)
class Running:
    pid: int
    create_time: float


def read_pidfile(path: Path) -> Running | None:
    """The process recorded in `path` if it is still the same live process, else None."""
    try:
        data = json.loads(path.read_text())
        proc = psutil.Process(data["pid"])
        if abs(proc.create_time() - data["create_time"]) > 1 or proc.status() == "zombie":
            return None
        return Running(data["pid"], data["create_time"])
    except (FileNotFoundError, ValueError, KeyError, psutil.Error):
        return None


def start(cmd: list[str], *, pidfile: Path, logfile: Path, env: dict[str, str], cwd: Path) -> int:
    """Start `cmd` detached in its own session, output appended to `logfile`; return its pid."""
    logfile.parent.mkdir(parents=True, exist_ok=True)
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as log:
        log.write(f"\n--- started {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(cmd)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    create_time = psutil.Process(proc.pid).create_time()
    pidfile.write_text(json.dumps({"pid": proc.pid, "create_time": create_time, "cmd": cmd}))
    return proc.pid


def stop(pidfile: Path, timeout: float = 30.0) -> int | None:
    """Stop the process group recorded in `pidfile`: SIGTERM, then SIGKILL after `timeout`.

    Returns the pid that was stopped, or None when nothing recorded there was running.
    """
    running = read_pidfile(pidfile)
    pidfile.unlink(missing_ok=True)
    if running is None:
        return None
    members = _group_members(running.pid)
    _signal_group(running.pid, signal.SIGTERM)
    _, alive = psutil.wait_procs(members, timeout=timeout)
    if alive:
        _signal_group(running.pid, signal.SIGKILL)
        for proc in alive:
            _kill_quietly(proc)
        psutil.wait_procs(alive, timeout=5)
    return running.pid


def _group_members(pid: int) -> list[psutil.Process]:
    try:
        leader = psutil.Process(pid)
        return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The process was started as a session (and so process group) leader.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _kill_quietly(proc: psutil.Process) -> None:
    with contextlib.suppress(psutil.Error):
        proc.kill()


def port_holder(port: int, host: str = "127.0.0.1") -> str | None:
    """Describe who holds TCP `port` for listening, or None when it is free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            return None
        except OSError:
            pass
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            if conn.pid is None:
                return "another process (its pid is not visible to this user)"
            try:
                proc = psutil.Process(conn.pid)
                cmdline = " ".join(proc.cmdline())[:120]
            except psutil.Error:
                cmdline = "?"
            return f"pid {conn.pid} ({cmdline})"
    return "another process"


def check_ports_free(ports: dict[int, str]) -> None:
    """Raise PortInUse naming every port in `ports` (port -> what needs it) that is taken."""
    problems = []
    for port, needed_by in sorted(ports.items()):
        holder = port_holder(port)
        if holder:
            problems.append(f"port {port} (needed by {needed_by}) is already in use by {holder}")
    if problems:
        raise PortInUse(
            "Cannot start the devstack: "
            + "; ".join(problems)
            + ". Stop what holds the port, or stop an earlier devstack with "
            "'python manage.py devstack down'."
        )


def wait_for(check, timeout: float, interval: float = 0.5) -> bool:
    """Call `check()` until it returns true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):  # a failing probe just means "not yet"
            if check():
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
