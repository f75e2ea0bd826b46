"""Start, find and stop background processes by pid (the embedded stack's, and each link's
stream).

Each started process gets a pid file holding its pid and start time, so `down` stops exactly
what `up` started and never a later process that happens to reuse the pid.

A process is started in a session (and process group) of its own, whose members are its own; or,
in the devstack's two hosts, in the session and group of its caller, so one signal to the
group kills a whole host: its members are then those carrying its mark (`MARK`, its pid file's
path, in their environment), which they hand on to every process they start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import psutil

Result = TypeVar("Result")

MARK = "ISTHMUS_PROCESS_OF"


class PortInUse(RuntimeError):
    """A port the devstack needs is held by something else."""


@dataclass(frozen=True)
class Running:
    pid: int
    create_time: float
    mark: str | None = None  # started in its caller's session: its members carry this mark


def _recorded(path: Path) -> Running | None:
    try:
        data = json.loads(path.read_text())
        return Running(int(data["pid"]), float(data["create_time"]), data.get("mark"))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def recorded_command(path: Path) -> list[str]:
    """The command line `path` records (empty when there is none)."""
    try:
        return [str(arg) for arg in json.loads(path.read_text())["cmd"]]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return []


def read_pidfile(path: Path) -> Running | None:
    """The process recorded in `path` if it is still the same live process, else None."""
    recorded = _recorded(path)
    if recorded is None:
        return None
    try:
        proc = psutil.Process(recorded.pid)
        if abs(proc.create_time() - recorded.create_time) > 1 or proc.status() == "zombie":
            return None
    except psutil.Error:
        return None
    return recorded


def start(
    cmd: list[str],
    *,
    pidfile: Path,
    logfile: Path,
    env: dict[str, str],
    cwd: Path,
    own_session: bool = True,
) -> int:
    """Start `cmd` detached, in its own session or (not `own_session`) its caller's, marked,
    output appended to `logfile`; return its pid."""
    mark = None if own_session else str(pidfile)
    # Marked as this pidfile's (a member of its caller's group), or not marked at all: a process
    # of its own started from a marked one (a broker a scenario restarts, a gateway's proxy) is
    # not a member of that one, to be stopped with it.
    env = {**env, MARK: mark} if mark is not None else {k: v for k, v in env.items() if k != MARK}
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
            start_new_session=own_session,
        )
    create_time = psutil.Process(proc.pid).create_time()
    record = {"pid": proc.pid, "create_time": create_time, "cmd": cmd, "mark": mark}
    pidfile.write_text(json.dumps(record))
    return proc.pid


def stop(
    pidfile: Path,
    timeout: float = 30.0,
    sig: int = signal.SIGTERM,
    *,
    ends_the_rest: Callable[[psutil.Process], bool] | None = None,
) -> int | None:
    """Stop what `pidfile` records: `sig` (SIGTERM unless the program wants another to stop
    at once) to the leader, or to the members `ends_the_rest` picks when another process of
    the session is the one that shuts the others down gracefully; SIGKILL to any survivor
    after `timeout`.

    Members of the leader's session are stopped too, even when the leader itself is gone, so a
    crashed Celery parent leaves no orphaned workers. Returns the recorded pid, or
    None when nothing of it was running.
    """
    recorded = _recorded(pidfile)
    pidfile.unlink(missing_ok=True)
    if recorded is None:
        return None
    members = _session_members(recorded)
    if not members:
        return None
    leader = [p for p in members if p.pid == recorded.pid]
    if ends_the_rest is not None:
        leader = [p for p in members if _matches(ends_the_rest, p)] or leader
    # The leader shuts its own children down gracefully (Celery finishes its tasks),
    # orphans without a leader are asked directly.
    for proc in leader or members:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)
    alive = _wait_gone(members, timeout)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    _wait_gone(alive, 5)
    return recorded.pid


def _matches(pick: Callable[[psutil.Process], bool], proc: psutil.Process) -> bool:
    try:
        return pick(proc)
    except psutil.Error:
        return False


def session_alive(leader: int, pidfile: Path | None = None) -> bool:
    """Whether any process is left of the session that process `leader` started (as `start`
    starts each: a session of its own, whose id is the leader's pid), or of those started in
    their caller's session with `pidfile` (their mark)."""
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            ours = os.getsid(proc.pid) == leader or (
                pidfile is not None and _marked(proc, str(pidfile))
            )
            if ours and proc.status() != psutil.STATUS_ZOMBIE:
                return True  # a zombie has ended: only its parent has not reaped it yet
    return False


def _marked(proc: psutil.Process, mark: str) -> bool:
    return proc.environ().get(MARK) == mark


def tree_rss(pid: int) -> int:
    """The resident memory of a process and all its descendants, in bytes (0 when it is
    gone)."""
    try:
        proc = psutil.Process(pid)
        family = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for member in family:
        with contextlib.suppress(psutil.Error):
            total += member.memory_info().rss
    return total


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to `timeout` for `procs` to end; return those still running. A process that
    ended but that its parent (another process: the Celery worker that started a stream, say)
    has not reaped yet is a zombie: it has ended, and waiting for it would only wait out the
    timeout."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for proc in procs:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(proc.pid, os.WNOHANG)  # reaps it when it is ours
            with contextlib.suppress(psutil.Error):
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.1)


def _session_members(recorded: Running) -> list[psutil.Process]:
    """Live processes in the session the recorded leader started (its sid is the leader's pid),
    or carrying its mark when it was started in its caller's session."""
    if recorded.mark is not None:
        marked = []
        for proc in psutil.process_iter():
            with contextlib.suppress(OSError, psutil.Error):
                if _marked(proc, recorded.mark):
                    marked.append(proc)
        return marked
    with contextlib.suppress(psutil.Error):
        if abs(psutil.Process(recorded.pid).create_time() - recorded.create_time) > 1:
            # The pid was recycled. Linux never reuses a pid still used as a session id, so no
            # orphan of ours can share that session: it belongs to someone else.
            return []
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getsid(proc.pid) == recorded.pid:
                members.append(proc)
    return members


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


def wait_for(
    check: Callable[[], Result],
    timeout: float,
    interval: float = 0.5,
    *,
    ignore: tuple[type[BaseException], ...] = (Exception,),
) -> Result | None:
    """The polling helper: call `check()` every `interval` seconds until it answers something
    true, and return that; None once `timeout` seconds passed. An exception of `ignore` (any,
    by default: a probe that fails just means "not yet") counts as a no; pass `ignore=()` to
    let them through."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(*ignore):
            result = check()
            if result:
                return result
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)
