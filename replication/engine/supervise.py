"""Stream supervision: one engine (the Spark application in `spark_jobs/`) copies the mirrors
of every link of this console. This module tells it which links and mirrors to run (through
`publish`), starts it with the first link and keeps it running, watches its heartbeat and each
link's, and fails a link the engine cannot run.

Celery beat calls `supervise_all` every couple of seconds. An engine that dies or stops beating
is restarted at once, and after a growing pause when it fails again; after `MAX_FAILURES`
failures in a row the links it runs are FAILED with its last error. A link the engine keeps
failing on (its copiers fail again and again) is FAILED alone, the others go on. What the
engine knows lives in Redis and in the destination clusters, so losing a worker, the beat or
Redis loses no data.
"""

from __future__ import annotations

import logging
import signal
import time

import redis
from django.conf import settings

from infra import processes
from replication.core import redis_channel
from replication.core.redis_channel import client
from replication.engine import process, publish, spare, standby, status, takeover
from replication.models import ClusterLink
from replication.states import link_states
from spark_jobs import control, launch

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 180  # time to start Spark and send the first heartbeat
HEALTHY_AFTER_S = 60  # running this long without trouble forgives earlier failures
# An engine that fails once (killed, its host short of memory) had run: it starts again at once,
# every second of the pause a second more of lag to catch up. Failing again, it pauses.
BACKOFF_S = [0, 10, 20, 40, 80]
MAX_FAILURES = len(BACKOFF_S) + 1
STOP_WAIT_S = 60  # the longest `stop` waits for the engine to let go of a link


def supervise_all() -> None:
    if standby.waiting_for_promotion():
        _say_standby()
        return
    known = set()
    r = client()
    for link in ClusterLink.objects.select_related("destination"):
        known.add(str(link.link_id))
        try:
            _supervise_link(link, r)
        except Exception:  # one broken link must not stop the others
            log.exception("Supervising the stream of cluster link %s failed", link.name)
    forget_deleted_links(known)
    supervise_engine()


_STANDBY_SAID_EVERY_S = 60
_standby_said_at = 0.0


def _say_standby() -> None:
    """Once a minute, not every round: why nothing is supervised."""
    global _standby_said_at
    if time.monotonic() - _standby_said_at >= _STANDBY_SAID_EVERY_S:
        _standby_said_at = time.monotonic()
        log.warning(
            "This database is a standby; waiting for promotion (manage.py promote_standby) "
            "before starting the engine"
        )


def forget_deleted_links(known: set[str]) -> None:
    """Take out of the engine each link that was here at an earlier round and is gone. One
    never seen is left alone: its link may not be committed yet (a request still running)."""
    r = client()
    seen_key = process.seen_key()
    try:
        seen = {control.text(link) for link in r.smembers(seen_key)}
        pipe = r.pipeline()
        pipe.delete(seen_key)
        if known:
            pipe.sadd(seen_key, *known)
        pipe.execute()
        gone = list(seen - known)
        if gone:
            log.info("Taking deleted cluster link(s) %s out of the engine", ", ".join(gone))
            for name in status.engine_names():  # a deleted link no longer says which ran it
                if r.hdel(control.links_key(process.engine_id(name=name)), *gone):
                    process.wake_engine(r, name)
    except redis.RedisError:
        return  # at the next round


def supervise(link: ClusterLink, now: float | None = None) -> None:
    """Bring the engine in line with the link's mirrors, as the beat does: tell it what to
    run, and start it if it does not run."""
    _supervise_link(link, client())
    supervise_engine(now)


def _supervise_link(link: ClusterLink, r: redis.Redis) -> None:
    with publish.control_lock(link) as acquired:
        if not acquired:  # another worker is on it
            return
        mirrors, flows = publish.wanted_mirrors(link), publish.wanted_flows(link)
        publish.publish_set(link, r, mirrors, flows)
        run = bool(mirrors or flows)
        heartbeat = control.link_heartbeat(r, str(link.link_id))
        if run and heartbeat.get("state") == "failed":
            fail_link(link, f"The engine cannot run the link: {heartbeat.get('error')}")
            run = False
        publish.publish_link(link, r, run)


def watch_engine() -> None:
    """The active beat's own look at the engine, beside the workers' rounds (`beat`): when a
    host dies with Redis's master, the survivors' Celery workers take a minute to reconnect and
    run tasks again, while the beat, on redis-py through the Sentinels, holds the lease again in
    seconds and so starts the engine on its host as soon as the takeover is due."""
    if not standby.waiting_for_promotion():
        supervise_engine()


def supervise_engine(now: float | None = None) -> None:
    """Start the engine (warm before the first link, unless ENGINE_LAZY: then with the first
    link that has mirrors to run), and keep it: restart it (after a pause) when it dies or
    hangs."""
    with redis_channel.held(f"engine:{process.engine_id()}:supervisor", 120) as acquired:
        if acquired:  # else another worker is on it
            _supervise_engine(client(), now or time.time())


def _supervise_engine(r: redis.Redis, now: float) -> None:
    record = process.supervision(r) or {"failures": 0}
    links = r.hlen(control.links_key(process.engine_id()))
    if record.get("failures", 0) >= MAX_FAILURES and links:
        record = {"failures": 0}  # a link resumed after the engine failed them: a fresh start
    heartbeat = control.engine_heartbeat(r, process.engine_id())
    if takeover.owner(record) != settings.HOST_NAME:
        # Another host started it last: it starts here only once silent for ENGINE_TAKEOVER_S
        # (`takeover`), keeping its count of failures in a row.
        _let_go_of_replaced_engine(record)
        _start_when_due(r, record, heartbeat, links, now)
        return
    spare.stop()
    if process.running():
        trouble = _trouble(heartbeat, record, now)
        if trouble:
            log.warning("The engine %s; restarting it", trouble)
            processes.stop(process.pidfile())
            _note_failure(r, record, trouble, now)
        elif record.get("failures") and now - record.get("started", now) > HEALTHY_AFTER_S:
            # Earlier failures are forgiven; what it runs as is kept (see `start_engine`).
            control.write_json(
                r,
                process.supervision_key(),
                {k: record[k] for k in ("started", "pid", "host") if k in record},
            )
        return
    if process.pidfile().exists():  # it was running and is gone
        process.pidfile().unlink()
        if heartbeat.get("state") != "stopped":
            error = heartbeat.get("error") or f"it exited; see {process.log_file()}"
            log.warning("The engine died: %s", error)
            if not _note_failure(r, record, error, now):
                return
    _start_when_due(r, record, heartbeat, links, now)


def _let_go_of_replaced_engine(record: process.Supervision) -> None:
    """This host's engine, if it still runs, was replaced by another host's while this host was
    away: every process of it is killed, not asked to stop (an engine that stops claims new
    epochs for its slots)."""
    running = process.running()
    if running:
        log.warning(
            "Host %s runs the engine now: killing this host's (pid %d)",
            takeover.owner(record),
            running.pid,
        )
        processes.stop(process.pidfile(), sig=signal.SIGKILL, ends_the_rest=lambda _: True)
    process.pidfile().unlink(missing_ok=True)


def _start_when_due(
    r: redis.Redis,
    record: process.Supervision,
    heartbeat: control.EngineHeartbeat,
    links: int,
    now: float,
) -> None:
    """Start the engine here unless it waits: for its pause after a failure, for a first link
    (ENGINE_LAZY), for a link resumed after it failed them all, or for another host."""
    if now < record.get("retry_at", 0) or (settings.ENGINE_LAZY and not links):
        return
    if record.get("failures", 0) >= MAX_FAILURES:
        return  # it failed its links: it starts again when one is resumed
    if takeover.wait_reason(record, heartbeat, now):
        spare.keep(now)  # it runs on another host: ready to take it over
        return
    owner = takeover.owner(record)
    if owner != settings.HOST_NAME:
        log.warning(
            "Taking the engine over from host %s: %s", owner, takeover.silent_for(heartbeat, now)
        )
        pid = spare.adopt(r)
        if pid is not None:
            _note_start(r, record, pid, now)
            log.info("The spare engine of this host (pid %d) runs the engine now", pid)
            return
    start_engine(r, record, now)


def _trouble(heartbeat: control.EngineHeartbeat, record: process.Supervision, now: float) -> str:
    started = record.get("started", now)
    beat = heartbeat.get("at_ms", 0) / 1000
    if beat < started:  # nothing heard from this run of the engine yet
        if now - started > STARTUP_TIMEOUT_S:
            return f"sent no heartbeat within {STARTUP_TIMEOUT_S} s of starting"
        return ""
    if now - beat > process.HEARTBEAT_TIMEOUT_S:
        return f"sent no heartbeat for {now - beat:.0f} s"
    return ""


def _note_failure(r: redis.Redis, record: process.Supervision, error: str, now: float) -> bool:
    """Count a failure; returns whether the engine may be started again (after a pause)."""
    failures = record.get("failures", 0) + 1
    record["failures"], record["error"] = failures, error
    if failures >= MAX_FAILURES:
        control.write_json(r, process.supervision_key(), record)
        _fail_engine_links(r, f"The engine failed {failures} times in a row: {error}")
        return False
    record["retry_at"] = now + BACKOFF_S[failures - 1]
    control.write_json(r, process.supervision_key(), record)
    return True


def _fail_engine_links(r: redis.Redis, message: str) -> None:
    """Every link the engine was to run is FAILED with the reason, and taken out of it."""
    links = [control.text(link) for link in r.hkeys(control.links_key(process.engine_id()))]
    for link in ClusterLink.objects.filter(link_id__in=links):
        fail_link(link, message)
    if links:
        r.hdel(control.links_key(process.engine_id()), *links)


def start_engine(r: redis.Redis, record: process.Supervision, now: float) -> None:
    """Start the engine (the links it runs are already in Redis)."""
    fresh = launch.is_local(settings.SPARK_MASTER) and _nothing_left(record)
    try:
        pid = process.start(process.pidfile(), fresh=fresh)
    except launch.LaunchRefused as exc:
        # Retrying cannot help until the operator changes the settings: the links show why.
        _fail_engine_links(r, f"The engine cannot start: {exc}")
        return
    _note_start(r, record, pid, now)
    log.info("Started the engine (pid %d)", pid)


def _note_start(r: redis.Redis, record: process.Supervision, pid: int, now: float) -> None:
    record["started"], record["retry_at"], record["pid"] = now, 0, pid
    record["host"] = settings.HOST_NAME
    control.write_json(r, process.supervision_key(), record)


def _nothing_left(record: process.Supervision) -> bool:
    """Whether the engine's copier tasks may start without waiting out those of an earlier
    engine: there are none when no engine ran here before, or the last one ran on this host and
    nothing of its process session is left. One that another host started may still run there:
    its tasks are waited out (their slot reports gone, `spark_jobs.engine`)."""
    if takeover.owner(record) != settings.HOST_NAME:
        return False
    return not process.engine_folder().exists() or (
        "pid" in record and not processes.session_alive(record["pid"], process.pidfile())
    )


def stop_engine() -> int | None:
    """Stop the engine (its links' copiers deliver what they queued first), and this host's
    spare; returns the engine's pid, None when it was not running."""
    spare.stop()
    return processes.stop(
        process.pidfile(),
        timeout=60,
        ends_the_rest=lambda proc: launch.is_engine_driver(proc.cmdline()),
    )


def stop(link: ClusterLink) -> None:
    """Take the link out of the engine, and wait until the copiers it ran have stopped
    writing (a beat that adds it again meanwhile starts it anew: that is not waited for)."""
    link_id = str(link.link_id)
    r = client()
    asked_ms = int(time.time() * 1000)
    r.hdel(control.links_key(process.engine_id(name=link.engine)), link_id)
    process.wake_engine(r, link.engine)
    deadline = time.monotonic() + STOP_WAIT_S
    while process.engine_pid(r, link.engine) is not None and time.monotonic() < deadline:
        heartbeat = control.link_heartbeat(r, link_id)
        runs = process.engine_links(r, link.engine)
        if (
            heartbeat.get("state") == "stopped"
            or heartbeat.get("started_ms", 0) > asked_ms
            or (runs is not None and link_id not in runs)
        ):
            return
        time.sleep(0.2)


def fail_link(link: ClusterLink, message: str) -> bool:
    """The engine cannot run the link: the link is FAILED with the last error, until someone
    resumes it. Only an ACTIVE link changes; returns whether it did. (Here, not in
    topics/links.py: the engine sits below topics in the domain's layers.)"""
    return link_states.system_change(
        link,
        "fail",
        ClusterLink.State.FAILED,
        by="stream supervisor",
        action="link.failed",
        message=message,
        failed=True,
        error_code="STREAM_FAILED",
        error_message=message,
    )
