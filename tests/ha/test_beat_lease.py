"""One active beat (issue 45): two real `celery beat` processes of the console, as two hosts
would run them, on a Redis of the test's own. Only the one holding the lease sends the
schedule's tasks (read off the broker's queues, each message naming the process that sent it);
killed with `kill -9`, the standby sends within the lease's time and a tick; a beat started
again stands by, and takes over at once when the active one stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from infra.processes import wait_for
from replication.engine import beat

pytestmark = pytest.mark.ha

ROOT = Path(__file__).resolve().parents[2]
QUEUES = ("celery", "verification")  # where the schedule's tasks go (celery_settings.py)
SENDS_S = 1.0  # the schedule's shortest period (sync-links): an active beat sends this often


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def broker(tmp_path) -> Iterator[redis.Redis]:
    """A Redis server of the test's own: the beats' broker and lease."""
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_timeout=2)
    assert wait_for(client.ping, 10), "the test's Redis did not start"
    try:
        yield client
    finally:
        server.kill()
        server.wait()


class Beats:
    """The beats the test runs, each a host of its own to the lease (ISTHMUS_HOST_NAME), and
    the tasks they sent, by the pid of the sender."""

    def __init__(self, broker: redis.Redis, folder: Path):
        self.broker, self.folder = broker, folder
        self.running: list[subprocess.Popen] = []
        self.sent: list[tuple[float, int]] = []  # (when the test saw it, sender's pid)

    def start(self, host: str) -> subprocess.Popen:
        port = self.broker.connection_pool.connection_kwargs["port"]
        env = {
            **os.environ,
            "REDIS_URL": f"redis://127.0.0.1:{port}/0",
            # One database for both: one deployment, one lease.
            "DATABASE_URL": f"sqlite:///{self.folder / 'isthmus.sqlite3'}",
            "ISTHMUS_HOST_NAME": host,
        }
        command = [sys.executable, "-m", "celery", "-A", "console", "beat", "--loglevel", "INFO"]
        command += ["--schedule", str(self.folder / f"{host}-schedule")]
        command += ["--pidfile", str(self.folder / f"{host}-{len(self.running)}.pid")]
        with open(self.folder / f"{host}.log", "ab") as log:
            proc = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self.running.append(proc)
        return proc

    def collect(self) -> list[tuple[float, int]]:
        """The tasks sent since the last look, taken off the queues."""
        pipe = self.broker.pipeline()
        for queue in QUEUES:
            pipe.lrange(queue, 0, -1)
            pipe.delete(queue)
        found = pipe.execute()[::2]
        now = time.monotonic()
        new = [
            (now, int(json.loads(raw)["headers"]["origin"].split("@")[0].removeprefix("gen")))
            for messages in found
            for raw in messages
        ]
        self.sent += new
        return new

    def senders_for(self, seconds: float) -> set[int]:
        """The pids that sent tasks over the next `seconds`."""
        deadline, pids = time.monotonic() + seconds, set()
        while time.monotonic() < deadline:
            pids |= {pid for _, pid in self.collect()}
            time.sleep(0.2)
        return pids

    def first_from(self, pid: int, timeout: float) -> float:
        """When the test first saw a task `pid` sent (within `timeout`)."""
        found = wait_for(lambda: [at for at, sender in self.collect() if sender == pid], timeout)
        assert found, f"beat {pid} sent nothing within {timeout} s; see {self.folder}"
        return found[0]

    def active(self) -> dict | None:
        keys = list(self.broker.scan_iter("isthmus:beat:*:active"))
        return json.loads(self.broker.get(keys[0])) if keys else None

    def stop_all(self) -> None:
        for proc in self.running:
            proc.kill()
            proc.wait()


@pytest.fixture
def beats(broker, tmp_path) -> Iterator[Beats]:
    running = Beats(broker, tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


def test_two_beats_make_one_active_and_the_standby_takes_over(beats):
    a, b = beats.start("host-a"), beats.start("host-b")
    assert wait_for(beats.active, 60), "no beat took the lease"
    beats.collect()  # what was sent while they started
    senders = beats.senders_for(8 * SENDS_S)
    holder = beats.active()
    assert holder is not None and senders == {holder["pid"]}, (senders, holder)
    active, standby = (a, b) if holder["pid"] == a.pid else (b, a)
    assert holder["host"] == ("host-a" if active is a else "host-b")
    assert standby.poll() is None, "the standby beat is running"

    os.kill(active.pid, signal.SIGKILL)
    killed = time.monotonic()
    # What it sent before it died may reach the queues after the kill: drop it once it is
    # gone (the lease keeps the standby waiting far longer than this).
    active.wait()
    time.sleep(0.5)
    beats.collect()
    after_kill = len(beats.sent)
    took_over = beats.first_from(standby.pid, beat.LEASE_S + 10) - killed
    assert took_over <= beat.LEASE_S + beat.TICK_S + SENDS_S, took_over
    assert {pid for _, pid in beats.sent[after_kill:]} == {standby.pid}

    # The killed host's beat starts again: it stands by while the other is active.
    again = beats.start("host-a" if active is a else "host-b")
    assert beats.senders_for(10) == {standby.pid}, "the returning beat stands by"
    # The active one stopped cleanly hands the lease on at once.
    standby.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    handed_on = beats.first_from(again.pid, beat.LEASE_S + 10) - stopped
    standby.wait(timeout=30)
    assert handed_on <= beat.TICK_S + SENDS_S + 1, handed_on
    print(
        f"\nActive beat killed: the standby sent {took_over:.1f} s later (lease "
        f"{beat.LEASE_S:.0f} s, tick {beat.TICK_S:.0f} s); stopped cleanly: the next one sent "
        f"{handed_on:.1f} s later"
    )
