"""The devstack launcher: idempotent start, stop by pid, clear port conflicts, status."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid

import psutil
import pytest
from django.conf import settings
from django.db import connection

from devstack import kafka, registry
from devstack.stack import Stack
from infra import processes
from infra.processes import PortInUse, wait_for
from infra.schema_registry import SchemaRegistry, SchemaVersion
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
        for line in kafka.server_properties(kafka.DESTINATION.brokers[0], var_dir).splitlines()
    )
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "true"
    assert props["super.users"] == "User:admin"  # the links' replicator is no super-user
    assert "ANONYMOUS" not in props["super.users"]
    assert f"PLAINTEXT://127.0.0.1:{kafka.port(9093)}" in props["listeners"]
    if kafka.DESTINATION.size == 1:  # a stalled controller does not fence the only broker
        assert props["broker.session.timeout.ms"] == "30000"
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


@pytest.mark.skipif(settings.DEVSTACK_POSTGRES is None, reason="runs with ISTHMUS_DB=postgres")
@pytest.mark.django_db
def test_the_postgres_part_listens_on_loopback_only_and_its_role_is_no_superuser():
    result = subprocess.run(
        [sys.executable, "manage.py", "devstack", "status", "postgres"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    name, state, pid, address = result.stdout.splitlines()[1].split()
    assert (name, state, address) == ("postgres", "healthy", "127.0.0.1:5433")
    server = psutil.Process(int(pid))
    # PostgreSQL refuses root: run by root, the devstack runs it as Debian's `postgres` user.
    assert server.username() == ("postgres" if os.geteuid() == 0 else psutil.Process().username())
    assert (settings.VAR_DIR / "postgres" / "data").stat().st_mode & 0o077 == 0
    # TCP on the loopback only, and no Unix socket.
    listening = [c for c in server.net_connections(kind="all") if c.status == psutil.CONN_LISTEN]
    assert [(c.laddr.ip, c.laddr.port) for c in listening] == [("127.0.0.1", 5433)]
    assert not [c for c in server.net_connections(kind="unix") if c.laddr]

    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, True)  # CREATEDB: the tests make their database


# What Django does around each request, then one query: the console's next request.
NEXT_REQUEST = """
import sys, django
django.setup()
from django.db import close_old_connections, connection
for line in sys.stdin:
    close_old_connections()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        print(cursor.fetchone()[0], flush=True)
    close_old_connections()
"""


@pytest.mark.skipif(settings.DEVSTACK_POSTGRES is None, reason="runs with ISTHMUS_DB=postgres")
def test_a_new_postgres_part_is_made_and_the_console_outlives_its_restart():
    # Under var/, which the devstack's `postgres` user may pass through when run by root.
    var = settings.VAR_DIR / f"test-postgres-{uuid.uuid4().hex[:8]}"
    spec = {**settings.DEVSTACK_POSTGRES, "port": free_port(), "password": uuid.uuid4().hex}
    stack = Stack(var, postgres=spec)
    console = None
    try:
        stack.up(["postgres"], echo=lambda _: None)
        url = f"postgres://isthmus:{spec['password']}@127.0.0.1:{spec['port']}/isthmus"
        console = subprocess.Popen(
            [sys.executable, "-c", NEXT_REQUEST],
            cwd=ROOT,
            env={**os.environ, "ISTHMUS_DB": "postgres", "DATABASE_URL": url},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        console.stdin.write("request\n")
        console.stdin.flush()
        assert console.stdout.readline() == "1\n"
        stack.down(["postgres"], echo=lambda _: None)
        stack.up(["postgres"], echo=lambda _: None)
        # The connection kept from the first request died with the server: checked before
        # reuse, it is replaced, and the request goes through.
        console.stdin.write("request\n")
        console.stdin.flush()
        assert console.stdout.readline() == "1\n"
    finally:
        if console is not None:
            console.kill()
            console.wait()
        stack.down(["postgres"], echo=lambda _: None)
        shutil.rmtree(var, ignore_errors=True)


@pytest.mark.skipif(settings.DEVSTACK_POSTGRES is None, reason="runs with ISTHMUS_DB=postgres")
def test_with_postgres_a_schema_registry_keeps_its_schemas_across_a_restart(devstack, tmp_path):
    # A registry of its own (on a port of its own, in a database of its own), as the stack
    # starts its two: the shared ones stay up for the tests beside this one.
    own = registry.Registry(f"probe{uuid.uuid4().hex[:8]}", free_port())
    registry.prepare(own, settings.DEVSTACK_POSTGRES)
    environment = {**os.environ, **registry.env(own, settings.DEVSTACK_POSTGRES)}
    client = SchemaRegistry(own.url)

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(registry.command(), env=environment, stdout=subprocess.DEVNULL)
        assert wait_for(lambda: registry.ready(own), 30), "the registry did not start"
        return proc

    proc = start()
    try:
        schema = '{"type": "record", "name": "Kept", "fields": [{"name": "a", "type": "int"}]}'
        kept = client.register(SchemaVersion("kept-value", 0, 0, schema), keep_id=False)
        proc.terminate()
        proc.wait(30)
        proc = start()
        assert client.version("kept-value", 1).id == kept
    finally:
        proc.kill()
        proc.wait()
