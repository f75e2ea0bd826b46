"""The Redis keys the engine, its copier slots and the console share.

Console → engine: the links to run (`links_key`: each link's spec, sealed) and, per link, the
mirrors to run (`mirrors_key`, with a generation).
Engine → slots: each slot's epoch (`slot_epoch_key`: one per Spark job the engine runs for the
slot) and, per link, the partitions the slot copies (`slot_assignment_key`, a hash by link).
Slots → engine: each slot's report (`slot_report_key`), kept alive by expiry.
Engine → console: its own heartbeat, and per link a heartbeat and per-partition progress.

Whoever writes something the engine's loop (`engine_wake_channel`) or the slots' loops
(`slots_wake_channel`) should act on at once says so on that channel; the loops read the keys
every second regardless, so a message lost (Redis restarting) only delays, and an idle engine
wakes once a second instead of five times.

What each key holds is a TypedDict below (`MirrorSet`, `Assignment`, `SlotReport`,
`LinkHeartbeat`, ...): both ends build and read the same shapes.

Redis holds nothing that cannot be rebuilt: the console republishes links and mirror sets every
few seconds, the engine its epochs and assignments every loop, and a slot finds where each
partition stands from the destination cluster.

A link's spec holds the credentials of its clusters, so it is sealed (Fernet) with a key the
console derives from its own and gives the engine in its environment: Redis never holds them in
the clear.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict, final

import redis
from cryptography.fernet import Fernet, InvalidToken

SPEC_ENV = "ISTHMUS_ENGINE_SPEC"


# --- what the keys hold ----------------------------------------------------------------------
# The shapes of the JSON values, defined once for both ends (TypedDicts of the standard library:
# executors have nothing else). The console writes the engine's settings, the link specs and the
# mirror sets; the engine, its slots and their copiers write the rest.


class EngineSpec(TypedDict):
    """The engine's own settings, in its environment (SPEC_ENV)."""

    engine: str  # its id: every key below is under it
    key: str  # opens the links' sealed specs
    redis_url: str
    work_dir: str
    tasks: int | None  # copier slots (None: one per core Spark gives it)
    fresh: bool  # no task of an earlier engine can be alive: its first epochs start at once


class SlotSpec(TypedDict):
    """What a slot's Spark task is given of the engine's settings."""

    engine: str
    key: str
    redis_url: str


class RegistrySpec(TypedDict):
    url: str
    username: str | None
    password: str | None


class SchemaSpec(TypedDict):
    """Both schema registries, for a link whose records wait for their schemas."""

    source: RegistrySpec
    destination: RegistrySpec


class LinkSpec(TypedDict):
    """A link, as the links hash holds it (sealed): where to read, where to write."""

    link_id: str
    link_name: str
    source: dict[str, str]  # client settings
    destination: dict[str, str]
    schemas: NotRequired[SchemaSpec]


class Published(TypedDict):
    """A link's spec in the links hash: its digest, and the spec encrypted."""

    digest: str
    sealed: str


class FlowSpec(TypedDict):
    """A merge flow, as the console hands it to the engine (spark_jobs/merging.py)."""

    id: str
    name: str
    source: str  # topic
    destination: str  # topic
    mapping: str  # "one-to-one" or "by-key"
    parts: int
    source_cluster_id: str
    destination_cluster_id: str


class MirrorSpec(TypedDict):
    source_topic: str


class MirrorSet(TypedDict):
    """Per link (`mirrors_key`): the mirrors and merge flows to run, and the set's
    generation."""

    mirrors: dict[str, MirrorSpec]  # by mirror topic
    flows: dict[str, FlowSpec]  # by flow id
    generation: int


class FlowPart(FlowSpec):
    """A part of a merge flow, held by one slot."""

    part: int


@final  # so that `"flow" in entry` tells the two entries apart
class PartitionEntry(TypedDict):
    """What a copier needs to start copying a mirror partition."""

    mirror: str
    source: str  # topic
    topic_id: str  # the mirror topic's
    partition: int
    runs: list[list[int]]  # stored offset translation entries, [source, destination]


@final
class FlowEntry(TypedDict):
    flow: FlowPart


class Assignment(TypedDict):
    """A slot's share of one link (`slot_assignment_key`): its partitions and flow parts, and
    what they were planned for."""

    epoch: str
    version: int
    digest: str
    incarnation: int
    partitions: list[PartitionEntry | FlowEntry]


class SchemaWait(TypedDict):
    """A partition held at a record whose schema the destination's registry lacks."""

    offset: int
    ids: dict[str, str]  # schema id: why it waits
    since_ms: int


class PartitionReport(TypedDict):
    """A copier's mirror partition."""

    run: list[int]  # the translation entry in force, [source, destination]
    translated: bool
    next_source: int
    read_upto: int
    schema_wait: NotRequired[SchemaWait]


class FlowPartitionReport(TypedDict):
    """A merge flow's source partition."""

    next: int
    read: int
    source_hw: int
    checkpoint: NotRequired[Sequence[int] | None]  # one to one: (next, dest)
    others: NotRequired[bool]  # one to one: others write there too


class FlowReport(TypedDict):
    records: int
    skipped: int
    bytes: int
    last_write_ms: int
    latency_ms: int
    records_per_sec: float
    error: str
    partitions: dict[str, FlowPartitionReport]


class CopierReport(TypedDict):
    """A link's copier in a slot."""

    slot: int
    run: str  # this copier's counters start at 0
    version: int  # the assignment version applied
    state: str  # copying, waiting or failed
    error: str
    records: int
    bytes: int
    last_write_ms: int
    queued: int
    partitions: dict[str, PartitionReport]  # "partition/mirror"
    flows: dict[str, FlowReport]  # by flow part ("flow id/part")


class CopierFailures(TypedDict):
    count: int
    error: str
    given_up: bool


class SlotReport(TypedDict):
    """A slot's report (`slot_report_key`)."""

    epoch: str
    slot: int
    pid: int
    error: str
    consumers: int
    links: dict[str, CopierReport]
    failures: dict[str, CopierFailures]


# The engine's reports to the console. A report not there yet reads as an empty one, so every
# key may be missing to a reader.


class MirrorPartitionProgress(TypedDict, total=False):
    run: list[int]
    translated: bool
    source_hw: int
    read_upto: int
    next_source: int
    schema_wait: SchemaWait


MirrorProgress = dict[str, dict[str, MirrorPartitionProgress]]  # `progress_key`: mirror, partition


class LinkHeartbeat(TypedDict, total=False):
    """`heartbeat_key`."""

    at_ms: int
    started_ms: int
    pid: int  # the engine's
    state: str  # starting, running, stopping, stopped or failed
    error: str
    mirrors: list[str]  # of the generation taken up
    generation: int  # no copier writes outside of its mirror set any more
    epochs: list[str]
    records: int
    bytes: int
    records_per_sec: float
    bytes_per_sec: float
    fetched_at_ms: int  # when the source's high watermarks were last read
    last_write_ms: int
    behind: bool
    flows: dict[str, FlowReport]  # by flow id
    schema_waits: list[int]


class SlotLinkBeat(TypedDict):
    partitions: list[str]
    queued: int
    state: str
    error: str


class SlotBeat(TypedDict):
    slot: int
    epoch: str
    state: str  # running or restarting
    pid: int | None
    failures: int
    error: str
    records_per_sec: float
    consumers: int
    links: dict[str, SlotLinkBeat]


class EngineHeartbeat(TypedDict, total=False):
    """`engine_heartbeat_key`."""

    at_ms: int
    started_ms: int
    pid: int
    state: str
    error: str
    master: str
    slots: list[SlotBeat]
    links: dict[str, str]  # link id -> name


# A process's connections to Redis: its threads (a runner for each link) wait for one rather
# than fail (redis-py's own pool refuses a request beyond its 100 connections at once).
CONNECTIONS = 32
CONNECTION_WAIT_S = 10.0


# What Redis answers: bytes from these clients (redis-py's types allow str too, for clients
# made to decode).
Raw = bytes | str


def text(value: Raw) -> str:
    """A key or value Redis answered, as text."""
    return value.decode() if isinstance(value, bytes) else value


def client(url: str, timeout: float) -> redis.Redis:
    """A Redis client for many threads; `timeout` bounds each request."""
    pool = redis.BlockingConnectionPool.from_url(
        url,
        max_connections=CONNECTIONS,
        timeout=CONNECTION_WAIT_S,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )
    return redis.Redis(connection_pool=pool)


# --- per link -------------------------------------------------------------------------------


def mirrors_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:mirrors"


def heartbeat_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:heartbeat"


def progress_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:progress"


# --- the engine -----------------------------------------------------------------------------


def links_key(engine: str) -> str:
    """Hash: link id -> {"digest", "sealed"} of each link the engine runs."""
    return f"isthmus:engine:{engine}:links"


def engine_heartbeat_key(engine: str) -> str:
    return f"isthmus:engine:{engine}:heartbeat"


def slot_epoch_key(engine: str, slot: int) -> str:
    return f"isthmus:engine:{engine}:slot:{slot}:epoch"


def slot_assignment_key(engine: str, slot: int) -> str:
    """Hash: link id -> that link's partitions on the slot ({"epoch", "version", ...})."""
    return f"isthmus:engine:{engine}:slot:{slot}:assignment"


def slot_report_key(engine: str, slot: int, epoch: str) -> str:
    return f"isthmus:engine:{engine}:slot:{slot}:report:{epoch}"


def slot_report_pattern(engine: str, slot: int) -> str:
    """Every report of the slot, of any epoch."""
    return f"isthmus:engine:{engine}:slot:{slot}:report:*"


def writers_key(engine: str) -> str:
    """Hash: the mirror partitions ("link|topic id|partition") a copier began writing and did
    not end cleanly (everything it sent answered); deleted when it did."""
    return f"isthmus:engine:{engine}:writers"


def engine_pattern(engine: str) -> str:
    return f"isthmus:engine:{engine}:*"


def engine_wake_channel(engine: str) -> str:
    """Links or mirror sets changed, or a slot reports a new plan applied."""
    return f"isthmus:engine:{engine}:wake"


def slots_wake_channel(engine: str) -> str:
    """A slot's epoch or assignments changed."""
    return f"isthmus:engine:{engine}:slots-wake"


def wake(client: redis.Redis, channel: str) -> None:
    """Wake the loops listening on `channel` (if Redis does not answer, they poll anyway)."""
    with contextlib.suppress(redis.RedisError):
        client.publish(channel, b"")


class Wakeup:
    """A loop's pause: up to its period, ended early by a message on its channel."""

    def __init__(self, client: redis.Redis, channel: str):
        self.client, self.channel = client, channel
        self.pubsub: redis.client.PubSub | None = None

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        try:
            if self.pubsub is None:
                # redis-py leaves pubsub() unannotated.
                self.pubsub = self.client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
                self.pubsub.subscribe(self.channel)
            while (left := deadline - time.monotonic()) > 0:
                if self.pubsub.get_message(timeout=left) is not None:
                    while self.pubsub.get_message(timeout=0) is not None:
                        pass  # one wake for every message already there
                    return
        except redis.RedisError:
            self.close()  # subscribed again at the next wait
            time.sleep(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        if self.pubsub is not None:
            with contextlib.suppress(redis.RedisError):
                self.pubsub.close()
            self.pubsub = None


# --- values -----------------------------------------------------------------------------------


def read_json(client: redis.Redis, key: str) -> Any:
    """The JSON value at `key` (None when there is none): the caller names its shape (above)."""
    raw = client.get(key)
    return json.loads(raw) if raw else None


def write_json(client: redis.Redis, key: str, value: Mapping[str, object]) -> None:
    client.set(key, json.dumps(value, sort_keys=True))


# The engine's reports, as the console reads them: {} when there is none (not sent yet, or
# Redis lost it).


def link_heartbeat(client: redis.Redis, link_id: str) -> LinkHeartbeat:
    found: LinkHeartbeat | None = read_json(client, heartbeat_key(link_id))
    return found or {}


def link_progress(client: redis.Redis, link_id: str) -> MirrorProgress:
    found: MirrorProgress | None = read_json(client, progress_key(link_id))
    return found or {}


def engine_heartbeat(client: redis.Redis, engine: str) -> EngineHeartbeat:
    found: EngineHeartbeat | None = read_json(client, engine_heartbeat_key(engine))
    return found or {}


class Unsealed(RuntimeError):
    """A sealed spec that the engine's key does not open."""


def digest(key: str, spec: LinkSpec) -> str:
    """What identifies a spec's content without revealing it (an HMAC under the engine key):
    the engine restarts a link whose spec changed."""
    text = json.dumps(spec, sort_keys=True).encode()
    return hmac.new(key.encode(), text, hashlib.sha256).hexdigest()[:24]


def seal(key: str, spec: LinkSpec) -> str:
    """The spec as the links hash holds it: its digest, and its content encrypted."""
    sealed = Fernet(key).encrypt(json.dumps(spec).encode()).decode()
    published: Published = {"digest": digest(key, spec), "sealed": sealed}
    return json.dumps(published)


def digest_of(published: bytes | str) -> str:
    opened: Published = json.loads(published)
    return opened["digest"]


def unseal(key: str, published: bytes | str) -> LinkSpec:
    try:
        opened: Published = json.loads(published)
        spec: LinkSpec = json.loads(Fernet(key).decrypt(opened["sealed"].encode()))
    except (InvalidToken, KeyError, ValueError) as exc:
        raise Unsealed(
            "a link's spec cannot be opened with the engine's key (the console's encryption "
            "key changed?); the console publishes it again"
        ) from exc
    return spec
