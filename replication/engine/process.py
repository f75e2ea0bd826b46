"""This console's engine (the Spark application in `spark_jobs/`), as the supervisor, the
publishing of links and the status pages all need it: which engine it is (`engine_id`), where
it keeps its files, the key that seals its link specs, the Redis keys the supervisor keeps,
whether its process runs, which links its heartbeat says it runs, and waking it. A process keeps
one engine (settings.ENGINE_NAME); what it asks of another, a zone's that copies a link
(`ClusterLink.engine`), takes that engine's name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from pathlib import Path
from typing import TypedDict

import redis
from django.conf import settings

from infra import processes
from replication.core import engine_names
from replication.core.engine_names import engine_id, is_ours
from spark_jobs import control, launch

HEARTBEAT_TIMEOUT_S = 30  # an engine silent this long is hung
ENGINE_FRESH_S = 5  # an engine heartbeat this recent tells which links it runs


def engine_folder(owner: str | None = None) -> Path:
    """Where the engine keeps its files: its pid file and log, the code shipped to executors,
    a standalone master's secret file."""
    return settings.STREAM_DIR / f"engine-{engine_id(owner)}"


def pidfile() -> Path:
    return engine_folder() / "engine.pid"


def spare_pidfile() -> Path:
    """This host's spare engine (`spare`): its own pid file until it is adopted."""
    return engine_folder() / "spare.pid"


def spare_token_file() -> Path:
    """The token this host's spare runs as the engine on being told (`spare`)."""
    return engine_folder() / "spare.token"


def log_file() -> Path:
    return engine_folder() / "engine.log"


def engine_key() -> str:
    """The key that seals each link's spec in Redis, derived from the console's own key, so
    both ends know it and nothing stores it."""
    mac = hmac.new(settings.ENCRYPTION_KEY.encode(), b"isthmus engine link specs", hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).decode()


def supervision_key(name: str | None = None) -> str:
    return f"isthmus:engine:{engine_id(name=name)}:supervision"


def supervision(r: redis.Redis, name: str | None = None) -> Supervision:
    """What the supervisor of the engine named `name` (None: this process's) keeps of it."""
    found: Supervision | None = control.read_json(r, supervision_key(name))
    return found or {}


def seen_key() -> str:
    """The links this console's supervisor saw at its last round."""
    return f"isthmus:streams-seen:{engine_names.owner_of_links()}"


class Supervision(TypedDict, total=False):
    """What the supervisor keeps of the engine (`supervision_key`)."""

    failures: int  # in a row
    error: str  # the last failure's
    retry_at: float  # no start before then
    started: float  # when it last started
    pid: int  # of that start
    host: str  # where it started (docs/deployment.md): its supervisor keeps it


def running() -> processes.Running | None:
    """The engine process, if it runs."""
    return processes.read_pidfile(pidfile())


def runs_on(heartbeat: control.EngineHeartbeat, now: float | None = None) -> str | None:
    """The other host the engine runs on, as its heartbeat says, heard from within
    ENGINE_TAKEOVER_S (after that, any host may start it again); None when it runs on this
    host (`running` looks at its process) or was not heard from that recently."""
    host = heartbeat.get("host")
    if not host or host == settings.HOST_NAME:
        return None
    return host if _heard(heartbeat, now) else None


def _heard(heartbeat: control.EngineHeartbeat, now: float | None = None) -> bool:
    """Whether the engine said within ENGINE_TAKEOVER_S that it starts or runs."""
    age = (now or time.time()) - heartbeat.get("at_ms", 0) / 1000
    return age < settings.ENGINE_TAKEOVER_S and heartbeat.get("state") in ("starting", "running")


def engine_pid(r: redis.Redis, name: str | None = None) -> int | None:
    """The pid of the engine named `name` (None: this process's) wherever it runs: this host's
    process, or the one its heartbeat names from another host (`runs_on`), or, for an engine
    another process keeps (a zone's), from wherever it beats; None when it runs nowhere this
    host knows of."""
    found = running() if is_ours(name) else None
    if found is not None:
        return found.pid
    try:
        heartbeat = control.engine_heartbeat(r, engine_id(name=name))
    except redis.RedisError:
        # Nor can an engine on another host reach Redis: its copiers stop writing within
        # spark_jobs.copier.CONTACT_S of losing it, as if it did not run.
        return None
    return heartbeat.get("pid") if runs_elsewhere(heartbeat, name) else None


def runs_elsewhere(heartbeat: control.EngineHeartbeat, name: str | None = None) -> bool:
    """Whether the engine named `name` (None: this process's) runs beyond this host's process,
    as its heartbeat says: this process's on another host (`runs_on`), another's (a zone's,
    kept by another process) anywhere."""
    return runs_on(heartbeat) is not None if is_ours(name) else _heard(heartbeat)


def wake_engine(r: redis.Redis, name: str | None = None) -> None:
    """Have the engine (named `name`; None: this process's) read its links and mirror sets
    now, not at its next round."""
    control.wake(r, control.engine_wake_channel(engine_id(name=name)))


def engine_links(r: redis.Redis, name: str | None = None) -> dict[str, str] | None:
    """The links the engine (named `name`; None: this process's) runs (id -> name), as its
    heartbeat says; None when that heartbeat is older than ENGINE_FRESH_S (then nobody
    knows)."""
    engine = control.engine_heartbeat(r, engine_id(name=name))
    if time.time() - engine.get("at_ms", 0) / 1000 >= ENGINE_FRESH_S:
        return None
    return engine.get("links", {})


def start(pid_file: Path, *, fresh: bool, spare: str = "") -> int:
    """Start the engine's Spark application (a spare one, given its token: `spare`) recorded in
    `pid_file`, appending to the log; returns its pid. Raises launch.LaunchRefused on settings
    that cannot start it."""
    spec: control.EngineSpec = {
        "engine": engine_id(),
        "key": engine_key(),
        "redis_url": settings.REDIS_URL,
        "redis_sentinels": settings.REDIS_SENTINELS,
        "work_dir": str(engine_folder()),
        "tasks": settings.STREAM_TASKS,
        "host": settings.HOST_NAME,
        "fresh": fresh,
        "spare": spare,
    }
    argv, env = launch.submit_command(
        spec,
        master=settings.SPARK_MASTER,
        conf=settings.SPARK_CONF,
        auth_secret=settings.SPARK_AUTH_SECRET,
    )
    engine_folder().mkdir(parents=True, exist_ok=True)
    return processes.start(
        argv,
        pidfile=pid_file,
        logfile=log_file(),
        env=env,
        cwd=launch.ROOT,
        # On one of the devstack's two hosts it is one of the host's processes: killed with it.
        own_session=not settings.DEVSTACK_HOST,
    )
