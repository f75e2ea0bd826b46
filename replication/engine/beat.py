"""One active Celery beat at a time, however many run: each deployment may run a beat (or a
worker with `-B`) on two or more hosts, and only the one holding a lease in Redis sends the
scheduled tasks. The lease lasts LEASE_S and its holder renews it at every tick (at least every
TICK_S), so a standby takes over within LEASE_S + TICK_S of the active beat's death, and a beat
that finds its lease gone or taken sends nothing more from that tick on.

Celery runs this scheduler for every beat of the console (`beat_scheduler` in
console/celery_settings.py). Alone, a beat takes the free lease at its first tick and sends as
before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from typing import Any, TypedDict

import redis
from celery.beat import PersistentScheduler
from django.conf import settings
from django.db import close_old_connections

from replication.core import redis_channel
from replication.engine import process, supervise

log = logging.getLogger(__name__)

LEASE_S = 6.0  # a dead active beat's lease frees itself this long after its last tick
TICK_S = 1.0  # the longest a beat waits between ticks: the active one renews, a standby looks
WATCH_S = 2.0  # how often the active beat looks at the engine itself (`watch_engine`)


class ActiveBeat(TypedDict):
    """The beat that holds the lease, as it wrote it there."""

    host: str
    pid: int
    since: float  # when it became the active one (epoch seconds)
    token: str  # tells it from an earlier beat of the same host and pid


def lease_name() -> str:
    """One lease per deployment (per database, as its engine is), so a test run beside
    `make demo` on the same Redis has its own active beat."""
    return f"beat:{process.engine_id()}:active"


def active() -> ActiveBeat | None:
    """The beat that sends the scheduled tasks now, None when none does. A Redis that does not
    answer raises redis.RedisError."""
    found = redis_channel.holder(lease_name())
    return json.loads(found) if found else None


def health() -> dict[str, Any]:
    """The health check's line of the beat: which one is active (host and pid), or why none."""
    try:
        beat = active()
    except redis.RedisError as exc:
        return {"ok": False, "error": f"Redis at {settings.REDIS_URL} does not answer: {exc}"}
    if beat is None:
        return {
            "ok": False,
            "error": "No Celery beat holds the lease: start one (`celery -A console beat`, or "
            "a worker with -B) on at least one host.",
        }
    return {"ok": True, "host": beat["host"], "pid": beat["pid"], "since": beat["since"]}


class LeasedScheduler(PersistentScheduler):
    """Celery's scheduler (its schedule file kept per host, as before), sending only while it
    holds the deployment's beat lease."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lease: str | None = None  # what this beat wrote into the lease, while it holds it
        self.standing_by = False
        self.watcher: threading.Thread | None = None
        self.closed = threading.Event()
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if not self.hold_lease():
            return TICK_S
        if self.watcher is None:  # started here, in the beat's own process (not before a fork)
            self.watcher = threading.Thread(target=self.watch_engine, name="engine watch")
            self.watcher.daemon = True
            self.watcher.start()
        return min(super().tick(*args, **kwargs), TICK_S)

    def watch_engine(self) -> None:
        """While this beat is the active one, start or restart the engine when it is due, as
        the workers' supervision does, without waiting for a worker (supervise.watch_engine). A
        thread of its own: a start never holds up the tick that keeps the lease."""
        said = 0.0
        while not self.closed.wait(WATCH_S):
            if not self.lease:
                continue
            try:
                supervise.watch_engine()
            except Exception:  # Redis or the database failing over: the next round tries again
                if time.monotonic() - said > 60:
                    said = time.monotonic()
                    log.warning("The beat could not look at the engine", exc_info=True)
            finally:
                close_old_connections()

    def hold_lease(self) -> bool:
        """Renew the lease, or take it if it is free; whether this beat holds it now."""
        mine = self.lease or json.dumps(
            ActiveBeat(
                host=settings.HOST_NAME, pid=os.getpid(), since=time.time(), token=uuid.uuid4().hex
            )
        )
        try:
            held = redis_channel.claim(lease_name(), mine, LEASE_S)
        except redis.RedisError as exc:
            if self.lease:
                log.warning("This beat steps down: Redis does not answer (%s)", exc)
            self.lease = None
            return False
        if held and not self.lease:
            log.info(
                "This beat (host %s, pid %d) is now the active one: it sends the scheduled tasks",
                settings.HOST_NAME,
                os.getpid(),
            )
        elif not held and (self.lease or not self.standing_by):
            self._note_standby(stepped_down=bool(self.lease))
        self.lease, self.standing_by = (mine if held else None), not held
        return held

    def _note_standby(self, stepped_down: bool) -> None:
        try:
            other = active()
        except redis.RedisError:
            other = None
        who = f"host {other['host']}, pid {other['pid']}" if other else "another beat"
        if stepped_down:
            log.warning("This beat steps down: %s took the lease; it sends nothing now", who)
        else:
            log.info("This beat stands by: %s is the active one", who)

    def close(self) -> None:
        """A beat that stops lets go of the lease, so a standby takes over at its next tick."""
        if self.lease:
            # Redis not answering: the lease frees itself within LEASE_S.
            with contextlib.suppress(redis.RedisError):
                redis_channel.give_up(lease_name(), self.lease)
                log.info("This beat stops and hands the lease on")
            self.lease = None
        self.closed.set()
        super().close()
