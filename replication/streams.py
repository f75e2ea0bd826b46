"""Stream supervision: each cluster link with a mirror to run has one link stream (the Spark
application in `spark_jobs/`); this module starts it, tells it which mirrors to run, watches
its heartbeat and stops it.

Celery beat calls `supervise_all` every couple of seconds. A stream that dies, stops beating
or stops making progress is restarted after a growing pause; after `MAX_FAILURES` failures in
a row the link is FAILED with the stream's last error. What each stream knows lives in Redis
and in the destination cluster, so losing a worker, the beat or Redis loses no data.
"""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import redis
from django.conf import settings

from infra import processes
from infra.kafka_admin import KafkaAdmin, KafkaAdminError, TopicNotFound
from spark_jobs import control, launch, translation

from . import link_states, read_only, redis_channel
from .connections import destination_admin
from .mirror_states import COPYING
from .models import ClusterLink
from .redis_channel import client

log = logging.getLogger(__name__)

HEARTBEAT_TIMEOUT_S = 30  # a stream silent this long is hung
STARTUP_TIMEOUT_S = 180  # time to start Spark and send the first heartbeat
STUCK_TIMEOUT_S = 300  # a stream with records to copy and no write for this long is stuck
HEALTHY_AFTER_S = 60  # running this long without trouble forgives earlier failures
BACKOFF_S = [5, 10, 20, 40, 80]
MAX_FAILURES = len(BACKOFF_S) + 1


def folder(link_id: str) -> Path:
    """Where the link's stream keeps all its files."""
    return settings.STREAM_DIR / str(link_id)


def _pidfile(link_id: str) -> Path:
    return folder(link_id) / "stream.pid"


def log_file(link_id: str) -> Path:
    return folder(link_id) / "stream.log"


def _supervision_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:supervision"


@dataclass(frozen=True)
class StreamStatus:
    """What the console shows of a link's stream."""

    state: str  # STOPPED, STARTING, RUNNING, RESTARTING, FAILED or UNKNOWN (Redis silent)
    pid: int | None = None
    records_per_sec: float = 0.0
    bytes_per_sec: float = 0.0
    failures: int = 0
    error: str = ""


def wanted_mirrors(link: ClusterLink) -> dict[str, dict]:
    """The mirrors the link's stream should run now."""
    if link.state != ClusterLink.State.ACTIVE:
        return {}
    return {
        m.mirror_topic: {"source_topic": m.source_topic}
        for m in link.mirrors.filter(state__in=COPYING)
    }


def publish(link: ClusterLink, r: redis.Redis) -> int:
    """Tell the link's stream which mirrors to run; returns the generation of that set.

    The generation grows by one each time the set changes. The stream reports the generation
    it is running in its heartbeat, once it no longer writes any mirror the set left out:
    that is how a promote knows no writer is left (see `stopped_writing`).
    """
    return _publish(link, r, wanted_mirrors(link))


def _publish(link: ClusterLink, r: redis.Redis, wanted: dict[str, dict]) -> int:
    key = control.mirrors_key(str(link.link_id))
    published = control.read_json(r, key) or {}
    if published.get("mirrors") == wanted and "generation" in published:
        return published["generation"]
    generation = r.incr(_generation_key(str(link.link_id)))
    control.write_json(r, key, {"mirrors": wanted, "generation": generation})
    return generation


def _running(link_id: str) -> processes.Running | None:
    """The link's stream process, if it runs."""
    return processes.read_pidfile(_pidfile(link_id))


def _generation_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:generation"


def control_lock(link: ClusterLink, *, wait: float | None = None) -> AbstractContextManager[bool]:
    """The link's control lock: the supervisor holds it while it reads the mirrors to run and
    publishes them, so a state change made under it cannot be overwritten by a stale set.
    Yields whether it was acquired (always, when `wait` is given and the lock came free)."""
    return redis_channel.held(f"stream:{link.link_id}:supervisor", 120, wait=wait)


def stopped_writing(link: ClusterLink, mirror_topic: str, generation: int) -> bool:
    """Whether no stream of the link can write `mirror_topic` any more: none runs, or the one
    running has taken up mirror set `generation` (or a later one) without that mirror."""
    link_id = str(link.link_id)
    if _running(link_id) is None:
        return True
    heartbeat = control.read_json(client(), control.heartbeat_key(link_id)) or {}
    return (
        heartbeat.get("generation", 0) >= generation
        and mirror_topic not in heartbeat.get("mirrors", [])
        and heartbeat.get("state") in ("running", "stopped")
    )


def stream_spec(link: ClusterLink) -> dict:
    """What a stream needs to know: where to read, where to write, where to report."""
    return {
        "link_id": str(link.link_id),
        "link_name": link.name,
        "redis_url": settings.REDIS_URL,
        "source": link.source_client_config(),
        "destination": link.destination.connection_config(),
        "work_dir": str(folder(str(link.link_id))),
        "tasks": settings.STREAM_TASKS,
    }


def supervise_all() -> None:
    known = set()
    for link in ClusterLink.objects.select_related("destination"):
        known.add(str(link.link_id))
        try:
            supervise(link)
        except Exception:  # one broken link must not stop the others
            log.exception("Supervising the stream of cluster link %s failed", link.name)
    stop_streams_of_deleted_links(known)


def stop_streams_of_deleted_links(known: set[str]) -> None:
    """Stop each stream of this console whose link was here at an earlier round and is gone.
    One whose link was never seen is left alone: its link may not be committed yet (a request
    still running), or be another console's on this machine."""
    r = client()
    seen_key = _seen_key()
    try:
        seen = {link.decode() for link in r.smembers(seen_key)}
        pipe = r.pipeline()
        pipe.delete(seen_key)
        if known:
            pipe.sadd(seen_key, *known)
        pipe.execute()
    except redis.RedisError:
        return  # at the next round
    streams = settings.STREAM_DIR
    for link_id in [f.name for f in streams.iterdir()] if streams.exists() else []:
        if link_id not in seen or link_id in known or _owner_of(folder(link_id)) != _owner():
            continue
        if processes.read_pidfile(_pidfile(link_id)):
            log.info("Stopping the stream of deleted cluster link %s", link_id)
            processes.stop(_pidfile(link_id))


def _seen_key() -> str:
    """The links this console's supervisor saw at its last round."""
    return f"isthmus:streams-seen:{_owner()}"


def _owner() -> str:
    """Which console's streams these are: the database that holds their links."""
    return str(settings.DATABASES["default"]["NAME"])


def _owner_of(stream_folder: Path) -> str | None:
    try:
        return (stream_folder / "owner").read_text()
    except OSError:
        return None


def supervise(link: ClusterLink, now: float | None = None) -> None:
    """Bring the link's stream in line with its mirrors: tell it what to run; start, restart
    or stop it."""
    r = client()
    with control_lock(link) as acquired:
        if acquired:  # else another worker is on it
            _supervise(link, r, now or time.time())


def _supervise(link: ClusterLink, r: redis.Redis, now: float) -> None:
    link_id = str(link.link_id)
    wanted = wanted_mirrors(link)
    _publish(link, r, wanted)
    record = control.read_json(r, _supervision_key(link_id)) or {"failures": 0}
    if record.get("failures", 0) >= MAX_FAILURES and link.state == ClusterLink.State.ACTIVE:
        record = {"failures": 0}  # resumed after it FAILED: a fresh start
    running = _running(link_id)
    heartbeat = control.read_json(r, control.heartbeat_key(link_id)) or {}
    if not wanted:
        _stop_idle(link, r, record, running is not None)
        return
    if running:
        _watch(link, r, record, heartbeat, now)
        return
    if _pidfile(link_id).exists():  # it was running and is gone
        _pidfile(link_id).unlink()
        if heartbeat.get("state") != "stopped":
            error = heartbeat.get("error") or f"it exited; see {log_file(link_id)}"
            log.warning("The stream of cluster link %s died: %s", link.name, error)
            if not _note_failure(link, r, record, error, now):
                return
    if now < record.get("retry_at", 0):
        return
    start(link, r, record, now)


def _stop_idle(link: ClusterLink, r: redis.Redis, record: dict, running: bool) -> None:
    """No mirror to run: the stream stops, and a past failure is forgotten (unless FAILED)."""
    link_id = str(link.link_id)
    if running:
        log.info("Stopping the stream of cluster link %s: no mirror to run", link.name)
        processes.stop(_pidfile(link_id))
    if record.get("failures") and link.state != ClusterLink.State.FAILED:
        r.delete(_supervision_key(link_id))


def _watch(link: ClusterLink, r: redis.Redis, record: dict, heartbeat: dict, now: float) -> None:
    """A running stream in trouble is restarted (a failure noted); one healthy for long
    enough has its past failures forgotten."""
    link_id = str(link.link_id)
    trouble = _trouble(heartbeat, record, now)
    if trouble:
        log.warning("The stream of cluster link %s %s; restarting it", link.name, trouble)
        processes.stop(_pidfile(link_id))
        _note_failure(link, r, record, trouble, now)
    elif record.get("failures") and now - record.get("started", now) > HEALTHY_AFTER_S:
        r.delete(_supervision_key(link_id))


def _trouble(heartbeat: dict, record: dict, now: float) -> str:
    started = record.get("started", now)
    beat = heartbeat.get("at_ms", 0) / 1000
    if beat < started:  # nothing heard from this run of the stream yet
        if now - started > STARTUP_TIMEOUT_S:
            return f"sent no heartbeat within {STARTUP_TIMEOUT_S} s of starting"
        return ""
    if now - beat > HEARTBEAT_TIMEOUT_S:
        return f"sent no heartbeat for {now - beat:.0f} s"
    last_write = heartbeat.get("last_write_ms", 0) / 1000 or beat
    if heartbeat.get("behind") and now - max(last_write, started) > STUCK_TIMEOUT_S:
        return f"copied nothing for {STUCK_TIMEOUT_S} s although its source has new records"
    return ""


def _note_failure(link: ClusterLink, r: redis.Redis, record: dict, error: str, now: float) -> bool:
    """Count a failure; returns whether the stream may be started again (after a pause)."""
    failures = record.get("failures", 0) + 1
    record.update(failures=failures, error=error)
    if failures >= MAX_FAILURES:
        control.write_json(r, _supervision_key(str(link.link_id)), record)
        fail_link(link, f"The link's stream failed {failures} times in a row: {error}")
        return False
    record["retry_at"] = now + BACKOFF_S[failures - 1]
    control.write_json(r, _supervision_key(str(link.link_id)), record)
    return True


def start(link: ClusterLink, r: redis.Redis, record: dict, now: float) -> None:
    """Start the link's stream (its mirror set is already in Redis)."""
    link_id = str(link.link_id)
    try:
        argv, env = launch.submit_command(
            stream_spec(link),
            master=settings.SPARK_MASTER,
            conf=settings.SPARK_CONF,
            auth_secret=settings.SPARK_AUTH_SECRET,
        )
    except launch.LaunchRefused as exc:
        # Retrying cannot help until the operator changes the settings: the link shows why.
        fail_link(link, f"The link's stream cannot start: {exc}")
        return
    ensure_translation_topic(destination_admin(link))
    folder(link_id).mkdir(parents=True, exist_ok=True)
    (folder(link_id) / "owner").write_text(_owner())
    pid = processes.start(
        argv, pidfile=_pidfile(link_id), logfile=log_file(link_id), env=env, cwd=launch.ROOT
    )
    record.update(started=now, retry_at=0)
    control.write_json(r, _supervision_key(link_id), record)
    log.info("Started the stream of cluster link %s (pid %d)", link.name, pid)


def stop(link: ClusterLink) -> None:
    processes.stop(_pidfile(str(link.link_id)))


def ensure_translation_topic(admin: KafkaAdmin) -> None:
    """The destination's offset translation topic: kept forever, written only by links."""
    try:
        admin.describe_topic(translation.TOPIC)
        return
    except TopicNotFound:
        pass
    try:
        read_only.enforce(admin, translation.TOPIC)
        admin.create_topic(
            translation.TOPIC, 1, None, {"retention.ms": "-1", "cleanup.policy": "delete"}
        )
    except KafkaAdminError as exc:
        if "already exists" not in str(exc):
            raise


def status(link: ClusterLink, now: float | None = None) -> StreamStatus:
    now = now or time.time()
    link_id = str(link.link_id)
    try:
        r = client()
        heartbeat = control.read_json(r, control.heartbeat_key(link_id)) or {}
        record = control.read_json(r, _supervision_key(link_id)) or {}
    except redis.RedisError as exc:
        return StreamStatus("UNKNOWN", error=f"Redis does not answer: {exc}")
    running = _running(link_id)
    failures, error = record.get("failures", 0), record.get("error", "")
    if link.state == ClusterLink.State.FAILED:
        return StreamStatus("FAILED", failures=failures, error=error)
    if running is None:
        state = "RESTARTING" if failures else "STOPPED"
        return StreamStatus(state, failures=failures, error=error)
    fresh = heartbeat.get("at_ms", 0) / 1000 >= record.get("started", now)
    if not fresh or heartbeat.get("state") != "running":
        return StreamStatus("STARTING", running.pid, failures=failures, error=error)
    return StreamStatus(
        "RUNNING",
        running.pid,
        heartbeat.get("records_per_sec", 0.0),
        heartbeat.get("bytes_per_sec", 0.0),
        failures,
        heartbeat.get("error") or error,
    )


@dataclass(frozen=True)
class Progress:
    """The stream's last report."""

    partitions: dict  # {mirror topic: {partition: {...}}}
    fetched_at_ms: int = 0  # when it last fetched the source's high watermarks (0: never)
    writing: frozenset[str] = frozenset()  # the mirrors its tasks may still write


def progress(link: ClusterLink) -> Progress:
    link_id = str(link.link_id)
    try:
        r = client()
        reported = control.read_json(r, control.progress_key(link_id)) or {}
        heartbeat = control.read_json(r, control.heartbeat_key(link_id)) or {}
    except redis.RedisError:
        return Progress({})
    # A stream that is not running writes nothing, whatever its last heartbeat said.
    writing = heartbeat.get("mirrors", ()) if _running(link_id) else ()
    return Progress(reported, heartbeat.get("fetched_at_ms", 0), frozenset(writing))


def reported_lags(link: ClusterLink) -> dict[str, dict[int, int]]:
    """Per mirror and partition, the lag as the stream last reported it: the source's high
    watermark at its last fetch less how far it has read (source offsets not yet copied).
    Partitions it has not reported both of yet are left out. Costs one Redis read, no
    request to a cluster: for pages that show many links, and the charts' history."""
    try:
        reported = control.read_json(client(), control.progress_key(str(link.link_id))) or {}
    except redis.RedisError:
        return {}
    return {
        mirror: {
            int(partition): max(0, p["source_hw"] - p["read_upto"])
            for partition, p in partitions.items()
            if p["source_hw"] >= 0 and p["read_upto"] >= 0
        }
        for mirror, partitions in reported.items()
    }


def fail_link(link: ClusterLink, message: str) -> bool:
    """The link's stream keeps failing: the link is FAILED with the last error, until someone
    resumes it. Only an ACTIVE link changes; returns whether it did. (Here, not in links.py:
    links imports promote, which imports this module.)"""
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
