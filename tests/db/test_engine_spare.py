"""A spare engine (replication/engine/spare.py), as the supervisor keeps it on a real Redis: the
host that does not run the engine keeps one started and no more; the takeover adopts it, its pid
file becoming the engine's, instead of starting Spark; one that died starts again only after a
pause; the host that runs the engine keeps none. The spare's process here is a stand-in
(`sleep`) for Spark's, which the host drills run for real (tests/ha/test_host_drills.py)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from infra import processes
from replication.core.redis_channel import client
from replication.engine import process, spare, status, supervise
from spark_jobs import control

pytestmark = [pytest.mark.usefixtures("light_stack"), pytest.mark.django_db]

NOW = time.time()


@pytest.fixture
def host_b(settings, tmp_path):
    settings.HOST_NAME, settings.ENGINE_SPARE, settings.STREAM_DIR = "host-b", True, tmp_path
    settings.ENGINE_TAKEOVER_S, settings.ENGINE_LAZY = 10.0, False
    r = client()
    keys = list(r.scan_iter(control.engine_pattern(process.engine_id())))
    r.delete(process.supervision_key(), *keys)
    yield r
    for pid_file in (process.pidfile(), process.spare_pidfile()):
        processes.stop(pid_file, sig=signal.SIGKILL)
    r.delete(process.supervision_key(), *r.scan_iter(control.engine_pattern(process.engine_id())))


@pytest.fixture
def started(monkeypatch, tmp_path) -> list[tuple[Path, bool]]:
    """Each engine process the supervisor starts (pid file, whether a spare), as a process
    that waits."""
    calls: list[tuple[Path, bool]] = []

    def start(pid_file: Path, *, fresh: bool, spare: str = "") -> int:
        calls.append((pid_file, bool(spare)))
        return _waiting(pid_file, tmp_path)

    monkeypatch.setattr(process, "start", start)
    return calls


def _waiting(pid_file: Path, folder: Path) -> int:
    return processes.start(
        ["sleep", "300"], pidfile=pid_file, logfile=folder / "log", env=dict(os.environ), cwd=folder
    )


def _engine_on_host_a(r, heard_s_ago: float, now: float = NOW) -> None:
    control.write_json(r, process.supervision_key(), {"host": "host-a", "started": now - 600})
    beat = {"at_ms": int((now - heard_s_ago) * 1000), "pid": 4242, "host": "host-a"}
    control.write_json(
        r, control.engine_heartbeat_key(process.engine_id()), {**beat, "state": "running"}
    )


def test_a_host_that_does_not_run_the_engine_keeps_one_spare(host_b, started):
    _engine_on_host_a(host_b, heard_s_ago=1)
    supervise._supervise_engine(host_b, NOW)
    supervise._supervise_engine(host_b, NOW + 2)
    assert started == [(process.spare_pidfile(), True)]  # one, and no engine of its own
    assert process.running() is None
    # Once it beats, the status (the Data plane page, /metrics) names its host.
    beat = {"at_ms": int(NOW * 1000), "pid": 1, "host": "host-b"}
    host_b.set(control.spare_key(process.engine_id(), "host-b"), json.dumps(beat), ex=5)
    assert status.engine_status().spares == ("host-b",)


def test_the_takeover_adopts_the_spare_instead_of_starting_spark(host_b, started):
    pid = _waiting(process.spare_pidfile(), process.engine_folder())
    process.spare_token_file().write_text("its-token")
    _engine_on_host_a(host_b, heard_s_ago=11)
    supervise._supervise_engine(host_b, NOW)
    assert started == []
    assert process.supervision(host_b) == {
        "host": "host-b",
        "started": NOW,
        "pid": pid,
        "retry_at": 0,
    }
    assert process.running().pid == pid and not process.spare_pidfile().exists()
    adopted = host_b.get(control.spare_adopted_key(process.engine_id(), "host-b"))
    assert adopted == b"its-token"  # what the spare waits for


def test_a_spare_that_died_starts_again_only_after_a_pause(host_b, started):
    _engine_on_host_a(host_b, heard_s_ago=1)
    pid = _waiting(process.spare_pidfile(), process.engine_folder())
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    supervise._supervise_engine(host_b, NOW)
    assert started == []  # it started less than RESTART_AFTER_S ago
    later = time.time() + spare.RESTART_AFTER_S
    _engine_on_host_a(host_b, heard_s_ago=1, now=later)
    supervise._supervise_engine(host_b, later)
    assert started == [(process.spare_pidfile(), True)]


def test_the_host_that_runs_the_engine_keeps_no_spare(host_b, started):
    pid = _waiting(process.spare_pidfile(), process.engine_folder())
    control.write_json(host_b, process.supervision_key(), {"host": "host-b", "started": NOW - 600})
    supervise._supervise_engine(host_b, NOW)
    assert started == [(process.pidfile(), False)]  # its engine, started again here
    assert processes.read_pidfile(process.spare_pidfile()) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
