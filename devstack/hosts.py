"""Isthmus as two hosts on one machine (ISTHMUS_DEVSTACK_HOSTS=2, docs/deployment.md): host-a and
host-b each run a console, Celery workers and a beat, a Redis server and a Sentinel, each under
its own ISTHMUS_HOST_NAME and engine folder (STREAM_DIR), so each host's worker starts the engine
there when it may. Redis's master starts on host A, its replica on host B; a third Sentinel, the
witness, runs outside both (quorum 2: losing one host leaves a majority). The database
(PostgreSQL) and the Kafka clusters are outside the hosts, as managed ones would be.

Each host's parts are started by its leader (devstack/host_leader.py), so they share its process
group, and so does the engine its worker starts: `kill_host` kills a whole host with one
`kill -9 -<pgid>`, and `manage.py devstack up` brings it back.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import redis
from django.conf import settings

from infra import processes

from . import kafka, sentinel

if TYPE_CHECKING:
    from .stack import Component, Stack

WITNESS = "sentinel-witness"
WITNESS_PORT = 26383
ORDER_TIMEOUT_S = 15  # for the leader to start a part it was asked to
# Ten Python processes (two hosts' consoles, workers, beats) starting at once on two busy cores
# have taken more than a minute each.
START_TIMEOUT_S = 180
# The Sentinels call the master down after 3 s without an answer: with 1 s (the single host's),
# two hosts starting on two cores at a load of 30 failed a live master over.
DOWN_AFTER_MS = 3000


@dataclass(frozen=True)
class Host:
    name: str
    index: int  # 0 for host-a: host B's ports are host A's plus one

    @property
    def web_port(self) -> int:
        return kafka.port(8000 + self.index)

    @property
    def redis_port(self) -> int:
        return kafka.port(6382 + self.index)

    @property
    def sentinel_port(self) -> int:
        return kafka.port(26381 + self.index)

    def folder(self, var_dir: Path) -> Path:
        return var_dir / "hosts" / self.name

    def stream_dir(self, var_dir: Path) -> Path:
        return self.folder(var_dir) / "streams"

    def part(self, name: str) -> str:
        return f"{name}@{self.name}"


HOSTS = (Host("host-a", 0), Host("host-b", 1))


def by_name(name: str) -> Host:
    for host in HOSTS:
        if host.name == name:
            return host
    raise ValueError(f"There is no host {name!r}: the hosts are {', '.join(h.name for h in HOSTS)}")


def in_use(stack: Stack) -> bool:
    """Whether the stack runs as two hosts: asked for, or still running from a start that was
    (so that `make down` without the setting stops them too)."""
    names = [*(host.name for host in HOSTS), WITNESS]
    running = (processes.read_pidfile(stack.pidfile(name)) for name in names)
    return settings.DEVSTACK_HOSTS == 2 or any(found is not None for found in running)


def host_env(host: Host, var_dir: Path) -> dict[str, str]:
    """What makes a process one of `host`'s: its name, its engine folder, its group; and a
    spare engine on the host that does not run it (unless ISTHMUS_ENGINE_SPARE=0)."""
    return {
        "ISTHMUS_HOST_NAME": host.name,
        "ISTHMUS_STREAM_DIR": str(host.stream_dir(var_dir)),
        "ISTHMUS_DEVSTACK_HOST": host.name,
        "ISTHMUS_ENGINE_SPARE": os.environ.get("ISTHMUS_ENGINE_SPARE", "1"),
    }


def _redis_command(host: Host, var_dir: Path) -> list[str]:
    """Host A's Redis starts as the master, host B's as its replica; but one started again
    while the other host's is the master (the Sentinels promoted it) starts as its replica."""
    other = HOSTS[1 - host.index]
    folder = host.folder(var_dir) / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    if host.index == 0 and not _answers_as_master(other.redis_port):
        return sentinel.redis_server(host.redis_port, folder)
    return sentinel.redis_server(
        host.redis_port, folder, "--replicaof", "127.0.0.1", str(other.redis_port)
    )


def _answers_as_master(port: int) -> bool:
    try:
        return sentinel.role(port) == "master"
    except redis.RedisError:
        return False


def _sentinel(name: str, port: int, folder: Path, host: str | None) -> Component:
    from .stack import Component

    master = sentinel.master_name()
    pair = (HOSTS[0].redis_port, HOSTS[1].redis_port)
    return Component(
        name=name,
        address=f"127.0.0.1:{port} (master {master!r}, quorum 2)",
        ports=(port,),
        prepare=lambda: sentinel.write_config(
            folder, port, master, pair, quorum=2, down_after_ms=DOWN_AFTER_MS
        ),
        command=lambda: ["redis-sentinel", str(sentinel.config_file(folder))],
        # With another Sentinel, a majority of three: a host may start while the other is down.
        ready=lambda: sentinel.sentinel_ready(port, master, others=1, replicas=0),
        host=host,
    )


def parts(stack: Stack) -> list[Component]:
    """Each host's leader and parts, and the witness Sentinel, in start order."""
    from .stack import Component, _alive_for, _celery_worker, _celery_worker_ready, _http_ok

    var, venv_bin = stack.var_dir, Path(sys.executable).parent
    found: list[Component] = []
    for host in HOSTS:
        env = partial(host_env, host, var)
        beat_pidfile = stack.pidfile(host.part("beat"))
        found += [
            Component(
                name=host.name,
                address=f"process group {host.name} (its leader's pid)",
                ports=(),
                command=partial(_leader_command, stack, host),
                ready=lambda: True,
            ),
            Component(
                name=host.part("redis"),
                address=f"127.0.0.1:{host.redis_port}",
                ports=(host.redis_port,),
                command=partial(_redis_command, host, var),
                ready=partial(sentinel.replica_ready, host.redis_port),
                host=host.name,
                start_timeout=START_TIMEOUT_S,
            ),
            _sentinel(
                host.part("sentinel"),
                host.sentinel_port,
                host.folder(var) / "sentinel",
                host.name,
            ),
        ]
        if host.index == 1:  # the witness, on no host, once both Redis servers run
            found.append(_sentinel(WITNESS, kafka.port(WITNESS_PORT), var / WITNESS, None))
        # The three workers of the single host (devstack/stack.py), on each host.
        for kind, queue, concurrency in (
            ("worker", "celery", 2),
            ("scenarios", settings.SCENARIO_QUEUE, 1),
            ("verifier", settings.VERIFY_QUEUE, 2),
        ):
            node = f"isthmus-{kind}@{host.name}"
            found.append(
                Component(
                    name=host.part(kind),
                    address=f"celery node {node}",
                    ports=(),
                    command=partial(_celery_worker, venv_bin, node, queue, concurrency),
                    ready=partial(_celery_worker_ready, node),
                    env=env,
                    host=host.name,
                    start_timeout=START_TIMEOUT_S,
                    celery=True,
                )
            )
        found += [
            Component(
                name=host.part("beat"),
                address="celery beat (one active: the lease)",
                ports=(),
                command=partial(_beat_command, venv_bin, host.folder(var) / "celerybeat-schedule"),
                ready=partial(_alive_for, beat_pidfile, 3),
                env=env,
                host=host.name,
                start_timeout=START_TIMEOUT_S,
                celery=True,
            ),
            Component(
                name=host.part("web"),
                address=f"http://127.0.0.1:{host.web_port}",
                ports=(host.web_port,),
                command=partial(_web_command, venv_bin, host.web_port),
                ready=partial(_http_ok, f"http://127.0.0.1:{host.web_port}/login/"),
                env=env,
                host=host.name,
                start_timeout=START_TIMEOUT_S,
            ),
        ]
    return found


def _leader_command(stack: Stack, host: Host) -> list[str]:
    return [sys.executable, "-m", "devstack.host_leader", str(orders(stack, host.name))]


def _beat_command(venv_bin: Path, schedule: Path) -> list[str]:
    return [
        str(venv_bin / "celery"),
        *("-A", "console", "beat", "--loglevel", "INFO", "--schedule", str(schedule)),
    ]


def _web_command(venv_bin: Path, port: int) -> list[str]:
    return [str(venv_bin / "python"), "-m", "console.web_server", "--listen", f"127.0.0.1:{port}"]


def orders(stack: Stack, host: str) -> Path:
    return stack.var_dir / "hosts" / host / "orders"


def start_part(
    stack: Stack, host: str, name: str, command: list[str], env: dict[str, str], cwd: Path
) -> int:
    """Have `host`'s leader start part `name` in its process group; its pid."""
    pidfile = stack.pidfile(name)
    pidfile.unlink(missing_ok=True)
    failed = pidfile.with_suffix(".failed")
    failed.unlink(missing_ok=True)
    order = {
        "cmd": command,
        "env": env,
        "cwd": str(cwd),
        "pidfile": str(pidfile),
        "logfile": str(stack.logfile(name)),
    }
    folder = orders(stack, host)
    folder.mkdir(parents=True, exist_ok=True)
    draft = folder / f"{name}.draft"
    # The environment may hold secrets: the order is its owner's only, and read once.
    with open(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        json.dump(order, out)
    placed = folder / f"{name}.json"
    draft.rename(placed)
    started = processes.wait_for(
        lambda: failed.exists() or processes.read_pidfile(pidfile), ORDER_TIMEOUT_S, 0.1
    )
    if failed.exists():
        raise OSError(failed.read_text())
    if not isinstance(started, processes.Running):
        # Taken back: a leader that comes to it later must not start what is reported failed.
        placed.unlink(missing_ok=True)
        raise OSError(f"host {host}'s leader did not start it within {ORDER_TIMEOUT_S} s")
    return started.pid


def kill_host(stack: Stack, name: str) -> int:
    """`kill -9` the whole process group of host `name`: its leader, every part, and the
    engine if it runs there. The group's id (the leader's pid)."""
    host = by_name(name)
    leader = processes.read_pidfile(stack.pidfile(host.name))
    if leader is None:
        raise ProcessLookupError(f"host {name} is not running")
    os.killpg(leader.pid, signal.SIGKILL)
    return leader.pid
