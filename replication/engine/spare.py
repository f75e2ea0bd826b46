"""A spare engine (ISTHMUS_ENGINE_SPARE), so a takeover costs no Spark start: on each host that
does not run the engine, its supervisor keeps one engine process started and warm (Spark's
JVMs and Python workers up) that claims no slot, writes nothing and speaks only under its own
key. When the engine's takeover falls to this host (`takeover`), the supervisor adopts the
spare instead of starting an engine: its pid file becomes the engine's, and the spare runs on
as the engine, claiming the slots' epochs as any engine starting does. The host that runs the
engine keeps no spare; one that stops running it (taken over while away) starts one.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import time

import redis
from django.conf import settings

from infra import processes
from replication.engine import process
from spark_jobs import control, launch

log = logging.getLogger(__name__)

RESTART_AFTER_S = 60  # a spare that died is started again no sooner than this after its start


def keep(now: float | None = None) -> None:
    """Start this host's spare unless it runs, or started less than RESTART_AFTER_S ago (one
    that keeps dying must not take the host's cores with Spark starts)."""
    if not settings.ENGINE_SPARE or processes.read_pidfile(process.spare_pidfile()):
        return
    pid_file = process.spare_pidfile()
    if pid_file.exists() and (now or time.time()) - pid_file.stat().st_mtime < RESTART_AFTER_S:
        return
    token = secrets.token_hex(8)
    process.engine_folder().mkdir(parents=True, exist_ok=True)
    process.spare_token_file().write_text(token)
    try:
        pid = process.start(pid_file, fresh=False, spare=token)
    except launch.LaunchRefused as exc:
        log.warning("Cannot start a spare engine on host %s: %s", settings.HOST_NAME, exc)
        return
    log.info("Started a spare engine on host %s (pid %d)", settings.HOST_NAME, pid)


def adopt(r: redis.Redis) -> int | None:
    """Make this host's spare the engine: its pid file the engine's, and the spare told by its
    token (which no later spare shares, should this one die first). Returns its pid; None when
    no spare runs here (then the engine is started the usual way)."""
    spare = processes.read_pidfile(process.spare_pidfile())
    if spare is None:
        return None
    token = process.spare_token_file().read_text()
    os.replace(process.spare_pidfile(), process.pidfile())
    r.set(control.spare_adopted_key(process.engine_id(), settings.HOST_NAME), token)
    process.wake_engine(r)
    return spare.pid


def stop() -> None:
    """No spare on the host that runs the engine (it would only hold memory)."""
    if process.spare_pidfile().exists():
        processes.stop(process.spare_pidfile(), sig=signal.SIGKILL)


def ready(r: redis.Redis) -> list[control.SpareBeat]:
    """The spares beating now, on any host, for the engine's status."""
    found = []
    for key in r.scan_iter(control.spare_key(process.engine_id(), "*")):
        if not control.text(key).endswith(":adopted") and (beat := control.read_json(r, key)):
            found.append(beat)
    return sorted(found, key=lambda beat: beat["host"])
