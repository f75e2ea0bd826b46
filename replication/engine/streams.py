"""Stream supervision: one engine (the Spark application in `spark_jobs/`) copies the mirrors
of every link of this console. This module tells it which links and mirrors to run, starts it
with the first link and keeps it running, watches its heartbeat and each link's, and fails a
link the engine cannot run.

Celery beat calls `supervise_all` every couple of seconds. An engine that dies or stops beating
is restarted after a growing pause; after `MAX_FAILURES` failures in a row the links it runs are
FAILED with its last error. A link the engine keeps failing on (its copiers fail again and
again) is FAILED alone, the others go on. What the engine knows lives in Redis and in the
destination clusters, so losing a worker, the beat or Redis loses no data.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import redis
from django.conf import settings

from infra import processes
from infra.kafka_admin import KafkaAdmin
from replication.core import read_only, redis_channel
from replication.core.redis_channel import client
from replication.kafka.connections import destination_admin
from replication.models import ClusterLink, MergeFlow
from replication.schemas import schema_links
from replication.states import link_states
from replication.states.mirror_states import COPYING
from spark_jobs import control, launch, translation

log = logging.getLogger(__name__)

HEARTBEAT_TIMEOUT_S = 30  # an engine silent this long is hung
STARTUP_TIMEOUT_S = 180  # time to start Spark and send the first heartbeat
HEALTHY_AFTER_S = 60  # running this long without trouble forgives earlier failures
BACKOFF_S = [5, 10, 20, 40, 80]
MAX_FAILURES = len(BACKOFF_S) + 1
ENGINE_FRESH_S = 5  # an engine heartbeat this recent tells which links it runs
STOP_WAIT_S = 60  # the longest `stop` waits for the engine to let go of a link


def engine_id(owner: str | None = None) -> str:
    """This console's engine (or that of the console whose database is `owner`): one per
    database of links, so a test run beside `make demo` has its own."""
    return hashlib.sha256((owner or _owner()).encode()).hexdigest()[:12]


def _owner() -> str:
    return str(settings.DATABASES["default"]["NAME"])


def engine_folder(owner: str | None = None) -> Path:
    """Where the engine keeps its files: its pid file and log, the code shipped to executors,
    a standalone master's secret file."""
    return settings.STREAM_DIR / f"engine-{engine_id(owner)}"


def _pidfile() -> Path:
    return engine_folder() / "engine.pid"


def log_file() -> Path:
    return engine_folder() / "engine.log"


def _engine_key() -> str:
    """The key that seals each link's spec in Redis, derived from the console's own key, so
    both ends know it and nothing stores it."""
    mac = hmac.new(settings.ENCRYPTION_KEY.encode(), b"isthmus engine link specs", hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).decode()


def _supervision_key() -> str:
    return f"isthmus:engine:{engine_id()}:supervision"


def _supervision(r: redis.Redis) -> Supervision:
    found: Supervision | None = control.read_json(r, _supervision_key())
    return found or {}


def _seen_key() -> str:
    """The links this console's supervisor saw at its last round."""
    return f"isthmus:streams-seen:{_owner()}"


class Supervision(TypedDict, total=False):
    """What the supervisor keeps of the engine (`_supervision_key`)."""

    failures: int  # in a row
    error: str  # the last failure's
    retry_at: float  # no start before then
    started: float  # when it last started
    pid: int  # of that start


@dataclass(frozen=True)
class StreamStatus:
    """What the console shows of a link's stream (its part of the engine)."""

    state: str  # STOPPED, STARTING, RUNNING, RESTARTING, FAILED or UNKNOWN (Redis silent)
    pid: int | None = None  # the engine's
    records_per_sec: float = 0.0
    bytes_per_sec: float = 0.0
    failures: int = 0  # the engine's failures in a row
    error: str = ""


def wanted_mirrors(link: ClusterLink) -> dict[str, control.MirrorSpec]:
    """The mirrors the link's stream should run now."""
    if link.state != ClusterLink.State.ACTIVE:
        return {}
    return {
        m.mirror_topic: {"source_topic": m.source_topic}
        for m in link.mirrors.filter(state__in=COPYING)
    }


def wanted_flows(link: ClusterLink) -> dict[str, control.FlowSpec]:
    """The merge flows the link's stream should run now, by id."""
    if link.state != ClusterLink.State.ACTIVE:
        return {}
    active = link.flows.filter(state=MergeFlow.State.ACTIVE).select_related("link__destination")
    return {str(f.flow_id): flow_spec(f) for f in active}


def flow_spec(flow: MergeFlow) -> control.FlowSpec:
    """What the engine needs to copy the flow (see spark_jobs/merging.py)."""
    return {
        "id": str(flow.flow_id),
        "name": flow.name,
        "source": flow.source_topic,
        "destination": flow.destination_topic,
        "mapping": flow.mapping,
        "parts": flow.parts,
        "source_cluster_id": flow.link.source_cluster_id,
        "destination_cluster_id": flow.link.destination.cluster_id,
    }


def publish(link: ClusterLink, r: redis.Redis) -> int:
    """Tell the engine which mirrors and merge flows of the link to run; returns the
    generation of that set.

    The generation grows by one each time the set changes. The engine reports the generation
    it is running in the link's heartbeat, once it no longer writes any mirror the set left out:
    that is how a promote knows no writer is left (see `stopped_writing`).
    """
    return _publish(link, r, wanted_mirrors(link), wanted_flows(link))


def _publish(
    link: ClusterLink,
    r: redis.Redis,
    mirrors: dict[str, control.MirrorSpec],
    flows: dict[str, control.FlowSpec],
) -> int:
    key = control.mirrors_key(str(link.link_id))
    published: control.MirrorSet | None = control.read_json(r, key)
    if (
        published
        and (published.get("mirrors"), published.get("flows", {})) == (mirrors, flows)
        and "generation" in published
    ):
        return published["generation"]
    generation = r.incr(_generation_key(str(link.link_id)))
    mirror_set: control.MirrorSet = {"mirrors": mirrors, "flows": flows, "generation": generation}
    control.write_json(r, key, mirror_set)
    _wake_engine(r)
    return generation


def _wake_engine(r: redis.Redis) -> None:
    """Have the engine read its links and mirror sets now, not at its next round."""
    control.wake(r, control.engine_wake_channel(engine_id()))


def _generation_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:generation"


def link_spec(link: ClusterLink) -> control.LinkSpec:
    """What the engine needs to run a link: where to read, where to write."""
    spec: control.LinkSpec = {
        "link_id": str(link.link_id),
        "link_name": link.name,
        "source": link.source_client_config(),
        "destination": link.destination.connection_config(),
    }
    schemas = schema_links.engine_spec(link)
    if schemas:
        spec["schemas"] = schemas  # records wait for their schemas (spark_jobs.schema_gate)
    return spec


def _publish_link(link: ClusterLink, r: redis.Redis, run: bool) -> None:
    """Add the link to the engine (or change its spec), or take it out."""
    link_id, key = str(link.link_id), control.links_key(engine_id())
    if not run:
        if r.hdel(key, link_id):
            _wake_engine(r)
        return
    spec, engine_key = link_spec(link), _engine_key()
    current = r.hget(key, link_id)
    if current is not None and control.digest_of(current) == control.digest(engine_key, spec):
        return
    ensure_translation_topic(destination_admin(link))
    if current is None:  # a heartbeat left from an earlier run says nothing of this one
        r.delete(control.heartbeat_key(link_id), control.progress_key(link_id))
    r.hset(key, link_id, control.seal(engine_key, spec))
    _wake_engine(r)


def _running() -> processes.Running | None:
    """The engine process, if it runs."""
    return processes.read_pidfile(_pidfile())


def control_lock(link: ClusterLink, *, wait: float | None = None) -> AbstractContextManager[bool]:
    """The link's control lock: the supervisor holds it while it reads the mirrors to run and
    publishes them, so a state change made under it cannot be overwritten by a stale set.
    Yields whether it was acquired (always, when `wait` is given and the lock came free)."""
    return redis_channel.held(f"stream:{link.link_id}:supervisor", 120, wait=wait)


def stopped_writing(link: ClusterLink, mirror_topic: str, generation: int) -> bool:
    """Whether nothing can write `mirror_topic` for the link any more: no engine runs, the
    engine runs nothing of the link, or it has taken up mirror set `generation` (or a later
    one) without that mirror."""
    link_id = str(link.link_id)
    if _running() is None:
        return True
    r = client()
    heartbeat = control.link_heartbeat(r, link_id)
    if not heartbeat:  # the engine never ran the link (or Redis lost its heartbeat)
        runs = _engine_links(r)
        return runs is not None and link_id not in runs
    if heartbeat.get("state") == "stopped":
        # A runner starting anew says so before it reads the mirror set, which no longer
        # holds the mirror.
        return True
    return (
        heartbeat.get("generation", 0) >= generation
        and mirror_topic not in heartbeat.get("mirrors", [])
        and heartbeat.get("state") in ("running", "stopping", "failed")
    )


def supervise_all() -> None:
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


def forget_deleted_links(known: set[str]) -> None:
    """Take out of the engine each link that was here at an earlier round and is gone. One
    never seen is left alone: its link may not be committed yet (a request still running)."""
    r = client()
    seen_key = _seen_key()
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
            r.hdel(control.links_key(engine_id()), *gone)
            _wake_engine(r)
    except redis.RedisError:
        return  # at the next round


def supervise(link: ClusterLink, now: float | None = None) -> None:
    """Bring the engine in line with the link's mirrors, as the beat does: tell it what to
    run, and start it if it does not run."""
    _supervise_link(link, client())
    supervise_engine(now)


def publish_now(link: ClusterLink) -> None:
    """New mirrors of a link the engine runs: their set published at once, not at the beat's
    next round (within 2 s). A link it does not run yet starts at that round, as ever; Redis
    not answering leaves it to that round too."""
    try:
        r = client()
        if r.hexists(control.links_key(engine_id()), str(link.link_id)):
            publish(link, r)
    except redis.RedisError as exc:
        log.warning("Could not hand link %s's mirrors to the engine yet: %s", link.name, exc)


def _supervise_link(link: ClusterLink, r: redis.Redis) -> None:
    with control_lock(link) as acquired:
        if not acquired:  # another worker is on it
            return
        mirrors, flows = wanted_mirrors(link), wanted_flows(link)
        _publish(link, r, mirrors, flows)
        run = bool(mirrors or flows)
        heartbeat = control.link_heartbeat(r, str(link.link_id))
        if run and heartbeat.get("state") == "failed":
            fail_link(link, f"The engine cannot run the link: {heartbeat.get('error')}")
            run = False
        _publish_link(link, r, run)


def supervise_engine(now: float | None = None) -> None:
    """Start the engine (warm before the first link, unless ENGINE_LAZY: then with the first
    link that has mirrors to run), and keep it: restart it (after a pause) when it dies or
    hangs."""
    with redis_channel.held(f"engine:{engine_id()}:supervisor", 120) as acquired:
        if acquired:  # else another worker is on it
            _supervise_engine(client(), now or time.time())


def _supervise_engine(r: redis.Redis, now: float) -> None:
    record = _supervision(r) or {"failures": 0}
    links = r.hlen(control.links_key(engine_id()))
    if record.get("failures", 0) >= MAX_FAILURES and links:
        record = {"failures": 0}  # a link resumed after the engine failed them: a fresh start
    heartbeat = control.engine_heartbeat(r, engine_id())
    if _running():
        trouble = _trouble(heartbeat, record, now)
        if trouble:
            log.warning("The engine %s; restarting it", trouble)
            processes.stop(_pidfile())
            _note_failure(r, record, trouble, now)
        elif record.get("failures") and now - record.get("started", now) > HEALTHY_AFTER_S:
            # Earlier failures are forgiven; what it runs as is kept (see `start_engine`).
            control.write_json(
                r, _supervision_key(), {"started": record.get("started"), "pid": record.get("pid")}
            )
        return
    if _pidfile().exists():  # it was running and is gone
        _pidfile().unlink()
        if heartbeat.get("state") != "stopped":
            error = heartbeat.get("error") or f"it exited; see {log_file()}"
            log.warning("The engine died: %s", error)
            if not _note_failure(r, record, error, now):
                return
    if now < record.get("retry_at", 0) or (settings.ENGINE_LAZY and not links):
        return
    if record.get("failures", 0) >= MAX_FAILURES:
        return  # it failed its links: it starts again when one is resumed
    start_engine(r, record, now)


def _trouble(heartbeat: control.EngineHeartbeat, record: Supervision, now: float) -> str:
    started = record.get("started", now)
    beat = heartbeat.get("at_ms", 0) / 1000
    if beat < started:  # nothing heard from this run of the engine yet
        if now - started > STARTUP_TIMEOUT_S:
            return f"sent no heartbeat within {STARTUP_TIMEOUT_S} s of starting"
        return ""
    if now - beat > HEARTBEAT_TIMEOUT_S:
        return f"sent no heartbeat for {now - beat:.0f} s"
    return ""


def _note_failure(r: redis.Redis, record: Supervision, error: str, now: float) -> bool:
    """Count a failure; returns whether the engine may be started again (after a pause)."""
    failures = record.get("failures", 0) + 1
    record["failures"], record["error"] = failures, error
    if failures >= MAX_FAILURES:
        control.write_json(r, _supervision_key(), record)
        _fail_engine_links(r, f"The engine failed {failures} times in a row: {error}")
        return False
    record["retry_at"] = now + BACKOFF_S[failures - 1]
    control.write_json(r, _supervision_key(), record)
    return True


def _fail_engine_links(r: redis.Redis, message: str) -> None:
    """Every link the engine was to run is FAILED with the reason, and taken out of it."""
    links = [control.text(link) for link in r.hkeys(control.links_key(engine_id()))]
    for link in ClusterLink.objects.filter(link_id__in=links):
        fail_link(link, message)
    if links:
        r.hdel(control.links_key(engine_id()), *links)


def start_engine(r: redis.Redis, record: Supervision, now: float) -> None:
    """Start the engine (the links it runs are already in Redis)."""
    spec: control.EngineSpec = {
        "engine": engine_id(),
        "key": _engine_key(),
        "redis_url": settings.REDIS_URL,
        "work_dir": str(engine_folder()),
        "tasks": settings.STREAM_TASKS,
        # Its copier tasks may start without waiting out those of an earlier engine: there are
        # none when no engine ran here before, or the last one ran on this machine and nothing
        # of its process session is left.
        "fresh": launch.is_local(settings.SPARK_MASTER)
        and (
            not engine_folder().exists()
            or ("pid" in record and not processes.session_alive(record["pid"]))
        ),
    }
    try:
        argv, env = launch.submit_command(
            spec,
            master=settings.SPARK_MASTER,
            conf=settings.SPARK_CONF,
            auth_secret=settings.SPARK_AUTH_SECRET,
        )
    except launch.LaunchRefused as exc:
        # Retrying cannot help until the operator changes the settings: the links show why.
        _fail_engine_links(r, f"The engine cannot start: {exc}")
        return
    engine_folder().mkdir(parents=True, exist_ok=True)
    pid = processes.start(argv, pidfile=_pidfile(), logfile=log_file(), env=env, cwd=launch.ROOT)
    record["started"], record["retry_at"], record["pid"] = now, 0, pid
    control.write_json(r, _supervision_key(), record)
    log.info("Started the engine (pid %d)", pid)


def stop_engine() -> int | None:
    """Stop the engine (its links' copiers deliver what they queued first); returns its pid,
    None when it was not running."""
    return processes.stop(
        _pidfile(), timeout=60, ends_the_rest=lambda proc: launch.is_engine_driver(proc.cmdline())
    )


def stop(link: ClusterLink) -> None:
    """Take the link out of the engine, and wait until the copiers it ran have stopped
    writing (a beat that adds it again meanwhile starts it anew: that is not waited for)."""
    link_id = str(link.link_id)
    r = client()
    asked_ms = int(time.time() * 1000)
    r.hdel(control.links_key(engine_id()), link_id)
    _wake_engine(r)
    deadline = time.monotonic() + STOP_WAIT_S
    while _running() is not None and time.monotonic() < deadline:
        heartbeat = control.link_heartbeat(r, link_id)
        runs = _engine_links(r)
        if (
            heartbeat.get("state") == "stopped"
            or heartbeat.get("started_ms", 0) > asked_ms
            or (runs is not None and link_id not in runs)
        ):
            return
        time.sleep(0.2)


def _engine_links(r: redis.Redis) -> dict[str, str] | None:
    """The links the engine runs (id -> name), as its heartbeat says; None when that heartbeat
    is older than ENGINE_FRESH_S (then nobody knows)."""
    engine = control.engine_heartbeat(r, engine_id())
    if time.time() - engine.get("at_ms", 0) / 1000 >= ENGINE_FRESH_S:
        return None
    return engine.get("links", {})


def ensure_translation_topic(admin: KafkaAdmin) -> None:
    """The destination's offset translation topic: kept forever, written only by links."""
    read_only.ensure_links_topic(
        admin, translation.TOPIC, 1, {"retention.ms": "-1", "cleanup.policy": "delete"}
    )


def status(link: ClusterLink, now: float | None = None) -> StreamStatus:
    now = now or time.time()
    link_id = str(link.link_id)
    try:
        r = client()
        heartbeat = control.link_heartbeat(r, link_id)
        record = _supervision(r)
        published = r.hexists(control.links_key(engine_id()), link_id)
    except redis.RedisError as exc:
        return StreamStatus("UNKNOWN", error=f"Redis does not answer: {exc}")
    failures, error = record.get("failures", 0), record.get("error", "")
    if link.state == ClusterLink.State.FAILED:
        return StreamStatus("FAILED", failures=failures, error=link.error_message or error)
    if not published:
        return StreamStatus("STOPPED")
    running = _running()
    if running is None:
        state = "RESTARTING" if failures else "STARTING"
        return StreamStatus(state, failures=failures, error=error)
    fresh = now - heartbeat.get("at_ms", 0) / 1000 < HEARTBEAT_TIMEOUT_S
    if not fresh or heartbeat.get("state") not in ("running", "failed"):
        return StreamStatus("STARTING", running.pid, failures=failures, error=error)
    return StreamStatus(
        "RUNNING",
        running.pid,
        heartbeat.get("records_per_sec", 0.0),
        heartbeat.get("bytes_per_sec", 0.0),
        failures,
        heartbeat.get("error", ""),
    )


def not_copying_yet(link: ClusterLink, stream: StreamStatus) -> str:
    """Why a mirror of `link` its stream has not fetched yet is not copying, and roughly how
    long it takes (the times are docs/benchmarks.md's, on a 2-core machine)."""
    if link.state == ClusterLink.State.PAUSED:
        return "The link is paused: its mirrors copy nothing until it is resumed."
    if link.state != ClusterLink.State.ACTIVE:
        return f"The link is {link.state}: its mirrors copy nothing until it is ACTIVE again."
    if stream.state == "STOPPED":
        return "The link's stream is not running yet: the supervisor starts it within 2 s."
    if stream.state == "RESTARTING":
        why = f" (last error: {stream.error})" if stream.error else ""
        return (
            f"The mirror engine is restarting after {stream.failures} failure"
            f"{'s' if stream.failures != 1 else ''} in a row{why}; it waits longer between "
            "attempts each time."
        )
    if stream.state == "STARTING" and stream.pid is None:
        return (
            "The mirror engine (one Spark application for every link) is starting: about "
            "6 s from cold, then the first records within a second or two."
        )
    if stream.state == "STARTING":
        return "The engine runs and is taking up this link: usually within a second."
    return "The link's stream reads this mirror for the first time: usually within 1–2 s."


@dataclass(frozen=True, order=True)
class SlotLink:
    """A link's part of one slot."""

    link: str  # its name (or id, when the engine has not named it)
    partitions: list[str]  # "partition/mirror"
    state: str  # copying, waiting or failed
    queued: int  # records waiting to be delivered
    error: str


@dataclass(frozen=True)
class Slot:
    number: int
    state: str  # running or restarting
    pid: int | None  # its Python worker's
    records_per_sec: float
    failures: int
    error: str
    links: list[SlotLink]  # by name
    consumers: int = 0  # of source clusters: links that read one source alike share one


@dataclass(frozen=True)
class EngineStatus:
    """What the Data plane page and /metrics show of the engine."""

    state: str  # STOPPED, STARTING, RUNNING, RESTARTING or UNKNOWN (Redis silent)
    pid: int | None = None
    master: str = ""
    started_at: dt.datetime | None = None
    rss_bytes: int = 0  # of the driver and every process it started on this machine
    links: int = 0
    failures: int = 0
    error: str = ""
    slots: tuple[Slot, ...] = ()


def engine_status() -> EngineStatus:
    try:
        r = client()
        heartbeat = control.engine_heartbeat(r, engine_id())
        record = _supervision(r)
    except redis.RedisError as exc:
        return EngineStatus("UNKNOWN", error=f"Redis does not answer: {exc}")
    running = _running()
    failures, error = record.get("failures", 0), record.get("error", "")
    if running is None:
        return EngineStatus("RESTARTING" if failures else "STOPPED", failures=failures, error=error)
    fresh = time.time() - heartbeat.get("at_ms", 0) / 1000 < HEARTBEAT_TIMEOUT_S
    names = heartbeat.get("links", {})
    slots = tuple(
        Slot(
            s["slot"],
            s["state"],
            s.get("pid"),
            s.get("records_per_sec", 0.0),
            s.get("failures", 0),
            s.get("error", ""),
            sorted(
                SlotLink(
                    names.get(link, link), p["partitions"], p["state"], p["queued"], p["error"]
                )
                for link, p in s.get("links", {}).items()
            ),
            s.get("consumers", 0),
        )
        for s in heartbeat.get("slots", [])
    )
    return EngineStatus(
        "RUNNING" if fresh and heartbeat.get("state") == "running" else "STARTING",
        running.pid,
        heartbeat.get("master", ""),
        dt.datetime.fromtimestamp(heartbeat["started_ms"] / 1000, dt.UTC)
        if heartbeat.get("started_ms")
        else None,
        processes.tree_rss(running.pid),
        len(names),
        failures,
        heartbeat.get("error") or error,
        slots,
    )


@dataclass(frozen=True)
class Progress:
    """The stream's last report."""

    partitions: control.MirrorProgress
    fetched_at_ms: int = 0  # when it last fetched the source's high watermarks (0: never)
    writing: frozenset[str] = frozenset()  # the mirrors its tasks may still write


def progress(link: ClusterLink) -> Progress:
    link_id = str(link.link_id)
    try:
        r = client()
        reported = control.link_progress(r, link_id)
        heartbeat = control.link_heartbeat(r, link_id)
    except redis.RedisError:
        return Progress({})
    # An engine that is not running writes nothing, whatever its last heartbeat said.
    writing = heartbeat.get("mirrors", ()) if _running() else ()
    return Progress(reported, heartbeat.get("fetched_at_ms", 0), frozenset(writing))


def schema_waits(link: ClusterLink) -> list[int]:
    """The schema ids the link's held partitions wait for (see `spark_jobs.schema_gate`)."""
    try:
        heartbeat = control.link_heartbeat(client(), str(link.link_id))
    except redis.RedisError:
        return []
    return heartbeat.get("schema_waits", []) if _running() else []


def fail_link(link: ClusterLink, message: str) -> bool:
    """The engine cannot run the link: the link is FAILED with the last error, until someone
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
