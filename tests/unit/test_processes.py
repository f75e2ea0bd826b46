"""Stopping a background process that another process started (a stream the Celery worker
launched, stopped from the console or a test) returns as soon as it has ended."""

import contextlib
import os
import subprocess
import sys
import time

import psutil

from infra import processes

# Starts `sleep` in a session of its own, records it, and then never reaps it.
LAUNCHER = """
import sys, time
from pathlib import Path
from infra import processes
processes.start(["sleep", "600"], pidfile=Path(sys.argv[1]), logfile=Path(sys.argv[2]),
                env={}, cwd=Path("."))
print("started", flush=True)
time.sleep(600)
"""


def test_a_process_that_its_parent_has_not_reaped_counts_as_stopped(tmp_path):
    pidfile = tmp_path / "sleep.pid"
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(pidfile), str(tmp_path / "sleep.log")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert launcher.stdout.readline().strip() == "started"
        assert processes.read_pidfile(pidfile) is not None
        began = time.monotonic()
        assert processes.stop(pidfile) is not None
        # Ended at once on SIGTERM, left a zombie of the launcher's: not 30 s waiting for it.
        assert time.monotonic() - began < 5
        assert processes.read_pidfile(pidfile) is None
    finally:
        launcher.kill()
        launcher.wait()


def test_a_session_is_alive_while_any_of_its_processes_is_even_after_its_leader_ended(tmp_path):
    # The leader starts a child that outlives it, as a JVM's Python workers may.
    pid = processes.start(
        ["sh", "-c", "sleep 600 & exit 0"],
        pidfile=tmp_path / "leader.pid",
        logfile=tmp_path / "leader.log",
        env={},
        cwd=tmp_path,
    )
    assert processes.wait_for(lambda: processes.read_pidfile(tmp_path / "leader.pid") is None, 10)
    try:
        assert processes.session_alive(pid)  # the sleep is left
    finally:
        subprocess.run(["pkill", "-s", str(pid)], check=False)
    assert processes.wait_for(lambda: not processes.session_alive(pid), 10)


def test_a_process_started_in_its_callers_group_is_stopped_with_what_it_started_alone(tmp_path):
    # As the engine on one of the devstack's two hosts: in the group of the host (here this
    # process), its members those carrying its mark, even a child whose parent has ended.
    pidfile = tmp_path / "engine.pid"
    pid = processes.start(
        ["sh", "-c", "sleep 600 & exec sleep 600"],
        pidfile=pidfile,
        logfile=tmp_path / "engine.log",
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        own_session=False,
    )
    neighbour = subprocess.Popen(["sleep", "600"])  # another of the host's processes
    try:
        assert os.getpgid(pid) == os.getpgid(0)
        assert processes.wait_for(lambda: len(_marked(pidfile)) == 2, 10)
        assert processes.session_alive(pid, pidfile)
        assert processes.stop(pidfile, timeout=5) == pid
        assert _marked(pidfile) == []
        assert not processes.session_alive(pid, pidfile)
        assert neighbour.poll() is None  # the rest of the group goes on
    finally:
        processes.stop(pidfile, timeout=5)  # (a failed assertion above leaves none behind)
        neighbour.kill()
        neighbour.wait()


def test_a_process_of_its_own_started_from_a_marked_one_is_not_its_member(tmp_path):
    # A broker a host's scenario worker restarts, a gateway its console starts: not stopped
    # with that worker or console.
    marked = {"PATH": "/usr/bin:/bin", processes.MARK: str(tmp_path / "worker.pid")}
    pidfile = tmp_path / "broker.pid"
    pid = processes.start(
        ["sleep", "600"], pidfile=pidfile, logfile=tmp_path / "b.log", env=marked, cwd=tmp_path
    )
    try:
        assert processes.MARK not in psutil.Process(pid).environ()
        assert _marked(tmp_path / "worker.pid") == []
    finally:
        processes.stop(pidfile, timeout=5)


def _marked(pidfile):
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(processes.MARK) == str(pidfile) and proc.status() != "zombie":
                found.append(proc.pid)
    return found
