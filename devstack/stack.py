"""The embedded stack: two Kafka clusters (of one broker each, or three), a schema registry for
each, Redis, Celery workers and beat, and the web console; with ISTHMUS_DB=postgres, a
PostgreSQL too, and with ISTHMUS_DEVSTACK_REDIS_SENTINEL=1 a replica of Redis and a Sentinel.
A cluster of three is three parts (`source-1` …), which its name (`source`) stands for. With
ISTHMUS_DEVSTACK_HOSTS=2, Isthmus's own parts run as two hosts (devstack/hosts.py), whose names
stand for their parts.

`up` checks every port first (so a conflict starts nothing), starts what is not already running,
then waits until each part answers. `down` stops, by recorded pid, exactly what `up` started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings

from infra import processes

from . import gateway, hosts, kafka, postgres, registry, sentinel
from .kafka import ROOT


@dataclass
class Component:
    name: str
    address: str
    ports: tuple[int, ...]
    command: Callable[[], list[str]]
    ready: Callable[[], bool]
    env: Callable[[], dict[str, str]] = dict
    prepare: Callable[[], None] = lambda: None
    start_timeout: float = 60.0
    stop_signal: int = signal.SIGTERM
    # Whether the whole stack (no part named) has it: one not wanted starts only when named.
    wanted: Callable[[], bool] = lambda: True
    host: str | None = None  # of the two hosts (devstack/hosts.py): started in its group
    # A Celery worker or beat: the engine's supervision runs there, and starts the engine again
    # when it is gone, so `devstack down` stops these before the engine.
    celery: bool = False


@dataclass
class PartStatus:
    name: str
    address: str
    pid: int | None
    healthy: bool

    @property
    def state(self) -> str:
        if self.pid is None:
            return "stopped"
        return "healthy" if self.healthy else "unhealthy"


class StackError(RuntimeError):
    pass


def _kafka_ready(broker: kafka.Broker, var_dir: Path) -> bool:
    """The node answers metadata requests on both its listeners."""
    from infra.admin_client import AdminClient

    sasl = f"127.0.0.1:{broker.sasl_port}"
    node = kafka.cluster_of(broker)
    plain = {"bootstrap.servers": f"127.0.0.1:{broker.plaintext_port}"}
    for conf in (plain, kafka.sasl_client_config(node, var_dir, bootstrap=sasl)):
        admin = AdminClient({**conf, "socket.timeout.ms": 2000, "log_level": 0})
        admin.describe_cluster(request_timeout=2).result(timeout=3)
    return True


def _redis_ready(port: int) -> bool:
    import redis

    return bool(redis.Redis(port=port, socket_timeout=1).ping())


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - fixed local URL
        return resp.status == 200


def _alive_for(pidfile: Path, seconds: float) -> bool:
    """The recorded process is running and has been for `seconds` (it did not die at start)."""
    running = processes.read_pidfile(pidfile)
    return running is not None and time.time() - running.create_time >= seconds


# Every Celery worker's (the tests' too): without mingle and gossip. Isthmus uses neither (its
# workers share Redis and the database, not each other's state), and on a host whose Redis
# master died the survivors spent half a minute in them before taking tasks again
# (docs/deployment.md).
WORKER_OPTIONS = ("--without-mingle", "--without-gossip")


def _celery_worker(venv_bin: Path, node_name: str, queue: str, concurrency: int) -> list[str]:
    return [
        str(venv_bin / "celery"),
        "-A",
        "console",
        "worker",
        "--loglevel",
        "INFO",
        "--queues",
        queue,
        "--concurrency",
        str(concurrency),
        "--hostname",
        node_name,
        *WORKER_OPTIONS,
    ]


def _celery_worker_ready(node_name: str) -> bool:
    from console.celery import app

    replies = app.control.ping(destination=[node_name], timeout=1.0)
    return bool(replies)


class Stack:
    """The devstack rooted at `var_dir`. Operations take part names to act on only some parts.

    `postgres` (settings.DEVSTACK_POSTGRES: host, port, user, name, password) adds a PostgreSQL
    part, first in start order.
    """

    def __init__(
        self,
        var_dir: Path,
        web_port: int | None = None,
        redis_port: int | None = None,
        postgres: dict | None = None,
    ):
        self.var_dir = var_dir
        self.web_port = web_port or kafka.port(8000)
        self.redis_port = redis_port or kafka.port(6380)
        self.replica_port = kafka.port(sentinel.REPLICA_PORT)
        self.sentinel_port = kafka.port(sentinel.SENTINEL_PORT)
        self.postgres = postgres
        self.components = self._components()

    # The parts, in start order. -------------------------------------------------------------

    def _components(self) -> list[Component]:
        var = self.var_dir
        venv_bin = Path(sys.executable).parent
        worker_name = "isthmus-worker@devstack"
        scenario_worker = "isthmus-scenarios@devstack"
        verifier = "isthmus-verifier@devstack"
        parts = [
            Component(
                name=broker.name,
                address=f"127.0.0.1:{broker.plaintext_port} (SASL 127.0.0.1:{broker.sasl_port})",
                ports=(broker.plaintext_port, broker.sasl_port, broker.controller_port),
                prepare=partial(kafka.format_storage, broker, var),
                command=partial(kafka.broker_command, broker, var),
                env=partial(kafka.broker_env, broker, var),
                ready=partial(_kafka_ready, broker, var),
                # A node restarted beside five others and a running engine on two cores has
                # been seen to take 93 s (its logs loaded, its metadata replayed).
                start_timeout=180,
            )
            for node in kafka.NODES
            for broker in node.brokers
        ]
        if (database := self._postgres_part()) is not None:
            parts[:0] = [database, *self._standby_part(database)]
        if hosts.in_use(self):
            return parts + self._registries() + hosts.parts(self) + gateway.parts()
        parts.append(
            Component(
                name="redis",
                address=f"127.0.0.1:{self.redis_port}",
                ports=(self.redis_port,),
                prepare=lambda: (var / "redis").mkdir(parents=True, exist_ok=True),
                command=lambda: sentinel.redis_server(self.redis_port, var / "redis"),
                ready=lambda: _redis_ready(self.redis_port),
            )
        )
        parts += self._sentinel_parts()
        parts += self._registries()
        parts += [
            Component(
                name="worker",
                address=f"celery node {worker_name}",
                ports=(),
                command=lambda: _celery_worker(venv_bin, worker_name, "celery", 2),
                ready=lambda: _celery_worker_ready(worker_name),
                celery=True,
            ),
            # Scenario runs take minutes: they have a worker of their own, so the links'
            # supervision and syncs, which the scenarios wait on, are never queued behind them.
            Component(
                name="scenarios",
                address=f"celery node {scenario_worker}",
                ports=(),
                command=lambda: _celery_worker(
                    venv_bin, scenario_worker, settings.SCENARIO_QUEUE, 1
                ),
                ready=lambda: _celery_worker_ready(scenario_worker),
                celery=True,
            ),
            # Mirrors compared with their sources: the background rounds, and a range asked for.
            Component(
                name="verifier",
                address=f"celery node {verifier}",
                ports=(),
                command=lambda: _celery_worker(venv_bin, verifier, settings.VERIFY_QUEUE, 2),
                ready=lambda: _celery_worker_ready(verifier),
                celery=True,
            ),
            Component(
                name="beat",
                address="celery beat",
                ports=(),
                command=lambda: [
                    str(venv_bin / "celery"),
                    "-A",
                    "console",
                    "beat",
                    "--loglevel",
                    "INFO",
                    "--schedule",
                    str(var / "celerybeat-schedule"),
                ],
                ready=lambda: _alive_for(self.pidfile("beat"), 3),
                celery=True,
            ),
            Component(
                name="web",
                address=f"http://127.0.0.1:{self.web_port}",
                ports=(self.web_port,),
                command=lambda: [
                    str(venv_bin / "python"),
                    "-m",
                    "console.web_server",
                    "--listen",
                    f"127.0.0.1:{self.web_port}",
                ],
                # Liveness only: /healthz also probes every cluster, and an unreachable
                # cluster must not stop the console from starting.
                ready=lambda: _http_ok(f"http://127.0.0.1:{self.web_port}/login/"),
            ),
        ]
        return parts + gateway.parts()

    def _registries(self) -> list[Component]:
        return [
            Component(
                name=each.name,
                address=each.url,
                ports=(each.port,),
                command=registry.command,
                env=partial(registry.env, each, self.postgres),
                ready=partial(registry.ready, each),
                prepare=partial(registry.prepare, each, self.postgres),
            )
            for each in registry.REGISTRIES
        ]

    def _sentinel_parts(self) -> list[Component]:
        """A replica of Redis and a Sentinel watching both (devstack/sentinel.py), started with
        the others only with ISTHMUS_DEVSTACK_REDIS_SENTINEL=1, else when named."""
        var, master = self.var_dir, sentinel.master_name()
        pair = (self.redis_port, self.replica_port)

        def asked() -> bool:
            return settings.DEVSTACK_REDIS_SENTINEL

        return [
            Component(
                name="redis-replica",
                address=f"127.0.0.1:{self.replica_port} (replica of {self.redis_port})",
                ports=(self.replica_port,),
                prepare=lambda: (var / "redis-replica").mkdir(parents=True, exist_ok=True),
                command=lambda: sentinel.redis_server(
                    self.replica_port,
                    var / "redis-replica",
                    "--replicaof",
                    "127.0.0.1",
                    str(self.redis_port),
                ),
                ready=lambda: sentinel.replica_ready(self.replica_port),
                wanted=asked,
            ),
            Component(
                name="redis-sentinel",
                address=f"127.0.0.1:{self.sentinel_port} (master {master!r})",
                ports=(self.sentinel_port,),
                prepare=lambda: sentinel.write_config(
                    var / "redis-sentinel", self.sentinel_port, master, pair
                ),
                command=lambda: [
                    "redis-sentinel",
                    str(sentinel.config_file(var / "redis-sentinel")),
                ],
                ready=lambda: sentinel.sentinel_ready(self.sentinel_port, master),
                wanted=asked,
            ),
        ]

    def _postgres_part(self) -> Component | None:
        """The PostgreSQL part when asked for, or when one is still running from an earlier
        `ISTHMUS_DB=postgres` start (its recorded command line says where it listens)."""
        spec = self.postgres
        if spec is None:
            if processes.read_pidfile(self.pidfile("postgres")) is None:
                return None
            command = processes.recorded_command(self.pidfile("postgres"))
            option = dict(zip(command, command[1:], strict=False))
            spec = {
                "host": option.get("-h", "127.0.0.1"),
                "port": int(option.get("-p", kafka.port(5433))),
            }

        def prepare() -> None:
            if self.postgres is None:
                raise StackError("the PostgreSQL part starts with ISTHMUS_DB=postgres")
            postgres.prepare(self.var_dir, self.postgres)

        return Component(
            name="postgres",
            address=f"{spec['host']}:{spec['port']}",
            ports=(spec["port"],),
            prepare=prepare,
            command=lambda: postgres.command(self.var_dir, spec),
            ready=lambda: postgres.ready(spec["host"], spec["port"]),
            # SIGINT is PostgreSQL's fast shutdown; on SIGTERM it would wait for every client
            # (the web's and the worker's pooled connections) to hang up.
            stop_signal=signal.SIGINT,
        )

    def _standby_part(self, primary: Component) -> list[Component]:
        """A streaming replica of the PostgreSQL part (devstack/postgres.py), started only when
        named: the standby region's database (docs/deployment.md)."""
        if self.postgres is None:
            return []
        spec = {**self.postgres, "port": self.postgres["port"] + 1}  # 5434 beside 5433
        return [
            Component(
                name="postgres-standby",
                address=f"{spec['host']}:{spec['port']} (standby of {primary.address})",
                ports=(spec["port"],),
                prepare=lambda: postgres.prepare_standby(self.var_dir, spec, primary.ports[0]),
                command=lambda: postgres.command(
                    self.var_dir, spec, postgres.standby_data_dir(self.var_dir)
                ),
                ready=lambda: postgres.ready(spec["host"], spec["port"]),
                stop_signal=signal.SIGINT,
                wanted=lambda: False,
            )
        ]

    # Operations. ---------------------------------------------------------------------------

    def expand(self, names: Iterable[str]) -> list[str]:
        """The part names, a cluster's name standing for each of its brokers, a host's for its
        leader and parts (and a host part's leader is always among them)."""
        groups = {node.name: [b.name for b in node.brokers] for node in kafka.NODES}
        defined = [c.name for c in self.components if c.name.startswith(f"{gateway.GROUP}-")]
        groups[gateway.GROUP] = defined or [gateway.GROUP]
        for c in self.components:
            if c.host is not None:
                groups.setdefault(c.host, [c.host]).append(c.name)
        named = [part for name in names for part in groups.get(name, [name])]
        leaders = {c.host for c in self.components if c.name in named and c.host}
        known = [c.name for c in self.components if c.name in named or c.name in leaders]
        return known + [name for name in named if name not in known]

    def select(self, names: Iterable[str] | None) -> list[Component]:
        names = self.expand(names or [])
        if not names:  # the whole stack: each part wanted, or running
            return [
                c
                for c in self.components
                if c.wanted() or processes.read_pidfile(self.pidfile(c.name)) is not None
            ]
        known = {c.name: c for c in self.components}
        unknown = [n for n in names if n not in known]
        if unknown:
            asked_db = {"postgres", "postgres-standby"} & set(unknown)
            hint = " (PostgreSQL is one with ISTHMUS_DB=postgres)" if asked_db else ""
            if gateway.GROUP in unknown:
                hint += " (no gateway is defined: docs/gateways.md says how to define one)"
            raise StackError(
                f"Unknown part(s) {', '.join(unknown)}; the parts are {', '.join(known)}{hint}."
            )
        return [c for c in self.components if c.name in names]

    def pidfile(self, name: str) -> Path:
        return self.var_dir / "run" / f"{name}.pid"

    def logfile(self, name: str) -> Path:
        return self.var_dir / "log" / f"{name}.log"

    def up(self, names: Iterable[str] | None = None, echo: Callable[[str], None] = print) -> None:
        parts = self.select(names)
        to_start = [p for p in parts if processes.read_pidfile(self.pidfile(p.name)) is None]
        processes.check_ports_free({port: p.name for p in to_start for port in p.ports})
        for part in to_start:
            try:
                part.prepare()
            except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                raise StackError(f"{part.name} could not be prepared: {exc}") from exc
            command, env = part.command(), {**os.environ, **part.env()}
            try:
                if part.host is not None:  # by its host's leader, in its process group
                    pid = hosts.start_part(self, part.host, part.name, command, env, ROOT)
                else:
                    pid = processes.start(
                        command,
                        pidfile=self.pidfile(part.name),
                        logfile=self.logfile(part.name),
                        env=env,
                        cwd=ROOT,
                    )
            except OSError as exc:
                raise StackError(
                    f"{part.name} could not be started ({command[0]}: {exc.strerror or exc}). "
                    "Run 'make setup' to install what the stack needs."
                ) from exc
            echo(f"started {part.name} (pid {pid})")
        for part in parts:
            if not processes.wait_for(part.ready, part.start_timeout):
                running = processes.read_pidfile(self.pidfile(part.name))
                why = "it exited" if running is None else "it did not answer in time"
                raise StackError(
                    f"{part.name} failed to start: {why}. See {self.logfile(part.name)} "
                    f"(or 'python manage.py devstack logs {part.name}'). Parts already started "
                    "keep running; 'python manage.py devstack down' stops them."
                )
            echo(f"{part.name:<12} ready at {part.address}")

    def down(self, names: Iterable[str] | None = None, echo: Callable[[str], None] = print) -> None:
        for part in reversed(self.select(names)):
            pid = processes.stop(self.pidfile(part.name), sig=part.stop_signal)
            if pid is not None:
                echo(f"stopped {part.name} (pid {pid})")

    def status(self, names: Iterable[str] | None = None) -> list[PartStatus]:
        result = []
        for part in self.select(names):
            running = processes.read_pidfile(self.pidfile(part.name))
            healthy = running is not None and bool(processes.wait_for(part.ready, 0))
            result.append(
                PartStatus(part.name, part.address, running.pid if running else None, healthy)
            )
        return result

    def log_tail(self, name: str, lines: int = 50) -> str:
        (part,) = self.select([name])
        path = self.logfile(part.name)
        if not path.exists():
            return f"(no log yet at {path})"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
