"""The devstack launcher: idempotent start, stop by pid, clear port conflicts, status."""

import contextlib
import os
import signal
import socket
import subprocess
import sys

import psutil
import pytest

from devstack import kafka
from devstack.stack import Stack
from infra import processes
from infra.processes import PortInUse, wait_for
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_up_twice_starts_once_and_down_stops_exactly_what_up_started(tmp_path):
    stack = Stack(tmp_path, redis_port=free_port())
    try:
        stack.up(["redis"], echo=lambda _: None)
        (first,) = stack.status(["redis"])
        assert first.state == "healthy"

        started = []
        stack.up(["redis"], echo=started.append)
        assert not any(line.startswith("started") for line in started)
        (second,) = stack.status(["redis"])
        assert second.pid == first.pid
    finally:
        stack.down(["redis"], echo=lambda _: None)
    assert not psutil.pid_exists(first.pid) or psutil.Process(first.pid).status() == "zombie"
    (after,) = stack.status(["redis"])
    assert (after.state, after.pid) == ("stopped", None)


def test_a_port_in_use_is_named_with_what_holds_it(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        stack = Stack(tmp_path, redis_port=port)
        with pytest.raises(PortInUse) as refused:
            stack.up(["redis"], echo=lambda _: None)
    message = str(refused.value)
    assert f"port {port} (needed by redis)" in message
    assert f"pid {psutil.Process().pid}" in message
    assert not (tmp_path / "run" / "redis.pid").exists()


def test_status_shows_each_shared_part_with_address_pid_and_health(devstack):
    result = subprocess.run(
        [sys.executable, "manage.py", "devstack", "status", "source", "destination", "redis"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    for name in ("source", "destination", "redis"):
        assert lines[name][1] == "healthy"
        assert psutil.pid_exists(int(lines[name][2]))
    assert lines["source"][3] == "127.0.0.1:9092"
    assert lines["destination"][3] == "127.0.0.1:9093"


def test_the_broker_config_enforces_acls_without_trusting_anonymous(devstack, var_dir):
    props = dict(
        line.split("=", 1)
        for line in kafka.server_properties(kafka.DESTINATION, var_dir).splitlines()
    )
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "true"
    assert props["super.users"] == "User:admin;User:replicator"
    assert "ANONYMOUS" not in props["super.users"]
    assert "PLAINTEXT://127.0.0.1:9093" in props["listeners"]
    config = (kafka.DESTINATION.home(var_dir) / "server.properties").stat()
    assert config.st_mode & 0o077 == 0, "server.properties holds passwords: owner-only"


def test_down_also_stops_children_orphaned_by_a_dead_leader(tmp_path):
    pidfile = tmp_path / "run" / "part.pid"
    leader = processes.start(
        ["bash", "-c", "sleep 300 & sleep 300 & wait"],
        pidfile=pidfile,
        logfile=tmp_path / "part.log",
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert wait_for(lambda: len(psutil.Process(leader).children()) == 2, 10)
    children = psutil.Process(leader).children()
    os.kill(leader, signal.SIGKILL)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(leader).wait(5)
    assert all(child.is_running() for child in children)

    assert processes.stop(pidfile, timeout=5) == leader
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert alive == []
