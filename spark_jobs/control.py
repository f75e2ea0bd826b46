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

What each key holds is a TypedDict of `payloads` (`MirrorSet`, `Assignment`, `SlotReport`,
`LinkHeartbeat`, ...), also named here: both ends build and read the same shapes.

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
from collections.abc import Mapping
from typing import Any

import redis
from cryptography.fernet import Fernet, InvalidToken

from infra import redis_connect
from infra.redis_connect import Sentinels

# What the keys hold: each value's shape (`payloads`), named here as the console reads them.
from .payloads import Assignment as Assignment
from .payloads import CopierFailures as CopierFailures
from .payloads import CopierReport as CopierReport
from .payloads import EngineHeartbeat as EngineHeartbeat
from .payloads import EngineSpec as EngineSpec
from .payloads import FlowEntry as FlowEntry
from .payloads import FlowPart as FlowPart
from .payloads import FlowPartitionReport as FlowPartitionReport
from .payloads import FlowReport as FlowReport
from .payloads import FlowSpec as FlowSpec
from .payloads import LinkHeartbeat as LinkHeartbeat
from .payloads import LinkSpec as LinkSpec
from .payloads import MirrorPartitionProgress as MirrorPartitionProgress
from .payloads import MirrorProgress as MirrorProgress
from .payloads import MirrorSet as MirrorSet
from .payloads import MirrorSpec as MirrorSpec
from .payloads import PartitionEntry as PartitionEntry
from .payloads import PartitionReport as PartitionReport
from .payloads import Published as Published
from .payloads import RegistrySpec as RegistrySpec
from .payloads import SchemaSpec as SchemaSpec
from .payloads import SchemaWait as SchemaWait
from .payloads import SlotBeat as SlotBeat
from .payloads import SlotLinkBeat as SlotLinkBeat
from .payloads import SlotReport as SlotReport
from .payloads import SlotSpec as SlotSpec
from .payloads import SpareBeat as SpareBeat

SPEC_ENV = "ISTHMUS_ENGINE_SPEC"


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


def client(url: str, timeout: float, sentinels: Sentinels | None = None) -> redis.Redis:
    """A Redis client for many threads, at `url` or at the master `sentinels` name (the
    console's settings, in the engine's spec); `timeout` bounds each request."""
    return redis_connect.client(
        url, sentinels, timeout, connections=CONNECTIONS, connection_wait=CONNECTION_WAIT_S
    )


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


def spare_key(engine: str, host: str) -> str:
    """A spare engine's beat on `host` (SpareBeat), which expires once it goes silent."""
    return f"isthmus:engine:{engine}:spare:{host}"


def spare_adopted_key(engine: str, host: str) -> str:
    """The token of the spare on `host` its supervisor adopted: from then on, the engine."""
    return f"isthmus:engine:{engine}:spare:{host}:adopted"


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
