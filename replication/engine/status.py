"""What the console shows of the engine and of each link's stream (its part of the engine),
read from the heartbeats the engine writes to Redis and what the supervisor noted: a link's
stream state (`status`) and why a mirror does not copy yet, the engine and its slots
(`engine_status`, the Data plane page and /metrics), the partitions' last reported progress
and the schema ids a link's held partitions wait for.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

import redis

from infra import processes
from replication.core.redis_channel import client
from replication.engine import process, spare
from replication.kafka import zone_calls
from replication.models import ClusterLink, KafkaCluster
from spark_jobs import control


@dataclass(frozen=True)
class StreamStatus:
    """What the console shows of a link's stream (its part of the engine)."""

    state: str  # STOPPED, STARTING, RUNNING, RESTARTING, FAILED or UNKNOWN (Redis silent)
    pid: int | None = None  # the engine's
    records_per_sec: float = 0.0
    bytes_per_sec: float = 0.0
    failures: int = 0  # the engine's failures in a row
    error: str = ""


def status(link: ClusterLink, now: float | None = None) -> StreamStatus:
    now = now or time.time()
    link_id = str(link.link_id)
    try:
        r = client()
        heartbeat = control.link_heartbeat(r, link_id)
        record = process.supervision(r, link.engine)
        published = r.hexists(control.links_key(process.engine_id(name=link.engine)), link_id)
    except redis.RedisError as exc:
        return StreamStatus("UNKNOWN", error=f"Redis does not answer: {exc}")
    failures, error = record.get("failures", 0), record.get("error", "")
    if link.state == ClusterLink.State.FAILED:
        return StreamStatus("FAILED", failures=failures, error=link.error_message or error)
    if not published:
        return StreamStatus("STOPPED")
    pid = process.engine_pid(r, link.engine)
    if pid is None:
        state = "RESTARTING" if failures else "STARTING"
        return StreamStatus(state, failures=failures, error=error)
    fresh = now - heartbeat.get("at_ms", 0) / 1000 < process.HEARTBEAT_TIMEOUT_S
    if not fresh or heartbeat.get("state") not in ("running", "failed"):
        # Started again after failures (at once since the first): restarting, with why.
        state = "RESTARTING" if failures else "STARTING"
        return StreamStatus(state, pid, failures=failures, error=error)
    return StreamStatus(
        "RUNNING",
        pid,
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
    host: str = ""  # where it runs, as its heartbeat says
    spares: tuple[str, ...] = ()  # the hosts where a spare engine waits (replication/engine/spare)
    # A zone's: its keeper serving the console's calls to the zone's clusters (zone_calls.py),
    # {"host", "pid"}; None while none does, and for the console's own engine.
    keeper: dict | None = None


def engine_names() -> list[str]:
    """The names of the engines links may run in: the console's own ("", first) and each
    network zone's that a cluster or a link names."""
    named = {
        *KafkaCluster.objects.values_list("engine", flat=True),
        *ClusterLink.objects.values_list("engine", flat=True),
    }
    return ["", *sorted(named - {""})]


def engine_status(name: str | None = None) -> EngineStatus:
    """The engine named `name` (None: this process's), as its heartbeat and supervisor say."""
    ours = process.is_ours(name)
    try:
        r = client()
        heartbeat = control.engine_heartbeat(r, process.engine_id(name=name))
        record = process.supervision(r, name)
        spares = tuple(beat["host"] for beat in spare.ready(r)) if ours else ()
        keeper = control.read_json(r, zone_calls.keeper_key(name)) if name else None
    except redis.RedisError as exc:
        return EngineStatus("UNKNOWN", error=f"Redis does not answer: {exc}")
    running = process.running() if ours else None
    failures, error = record.get("failures", 0), record.get("error", "")
    if running is None and not process.runs_elsewhere(heartbeat, name):
        state = "RESTARTING" if failures else "STOPPED"
        return EngineStatus(state, failures=failures, error=error, spares=spares, keeper=keeper)
    fresh = time.time() - heartbeat.get("at_ms", 0) / 1000 < process.HEARTBEAT_TIMEOUT_S
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
        running.pid if running else heartbeat.get("pid"),
        heartbeat.get("master", ""),
        dt.datetime.fromtimestamp(heartbeat["started_ms"] / 1000, dt.UTC)
        if heartbeat.get("started_ms")
        else None,
        processes.tree_rss(running.pid) if running else 0,  # another host's: not measured here
        len(names),
        failures,
        heartbeat.get("error") or error,
        slots,
        heartbeat.get("host", ""),
        spares,
        keeper,
    )


def engine_health(now: float | None = None) -> dict:
    """The health check's line of the engine: where it runs (host and pid, as its heartbeat
    says, whichever host's console asks) and how long ago it was heard from."""
    try:
        heartbeat = control.engine_heartbeat(client(), process.engine_id())
    except redis.RedisError as exc:
        return {"ok": False, "error": f"Redis does not answer: {exc}"}
    if not heartbeat:
        return {
            "ok": False,
            "error": "The engine has sent no heartbeat yet: a worker's supervision starts it "
            "(with ISTHMUS_ENGINE_LAZY, once a link has mirrors).",
        }
    age = (now or time.time()) - heartbeat.get("at_ms", 0) / 1000
    state = heartbeat.get("state", "")
    line = {
        "ok": age < process.HEARTBEAT_TIMEOUT_S and state in ("starting", "running"),
        "host": heartbeat.get("host", ""),
        "pid": heartbeat.get("pid"),
        "state": state,
        "heartbeat_age_s": round(age, 1),
    }
    if not line["ok"]:
        line["error"] = f"The engine's last heartbeat ({state}) is {age:.0f} s old."
    return line


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
    writing = heartbeat.get("mirrors", ()) if process.engine_pid(r, link.engine) else ()
    return Progress(reported, heartbeat.get("fetched_at_ms", 0), frozenset(writing))


def schema_waits(link: ClusterLink) -> list[int]:
    """The schema ids the link's held partitions wait for (see `spark_jobs.schema_gate`)."""
    try:
        r = client()
        heartbeat = control.link_heartbeat(r, str(link.link_id))
        return heartbeat.get("schema_waits", []) if process.engine_pid(r, link.engine) else []
    except redis.RedisError:
        return []
