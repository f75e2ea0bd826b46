"""Reaching a cluster of another network zone: the console asks the keeper of that zone's
engine (`manage.py engine`, on a host of the zone), which makes the call there and sends the
answer back (`zone_service.py`), both through Redis. So the console reaches only the clusters
of its own network, and a cluster behind a firewall that lets nothing in is reached by the
keeper inside it, which connects out to Redis and to nothing else on the console's side.

A `ZoneAdmin` (or `ZoneRecords`) stands where a `KafkaAdmin` (or `Records`) stands, at the seam
of `connections.py`: each call is sent whole, sealed (Fernet, with a key derived from the
deployment's own, so only the console and the keepers, which hold it, can make or read one:
Redis sees neither credentials nor records), with a deadline after which the keeper drops it
unanswered. Its answer is the call's value, or the error it raised, as that same error. A zone
whose keeper does not answer is a cluster that does not answer (`Unreachable`), in words that
say what to start where.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis
from cryptography.fernet import Fernet
from django.conf import settings

from infra import redis_connect, wire
from infra.kafka_admin import KafkaAdmin
from infra.kafka_copy import Records
from infra.kafka_errors import Unreachable
from replication.core.engine_names import engine_id

# How long a call waits for its answer: an admin call makes a few requests of the cluster, a
# records call reads or copies up to 30 s (`Records`, `read_ranges`).
RECORDS_WAIT_S = 60.0
KEEPER_FRESH_S = 10  # a keeper that has not shown itself for this long is not serving
ANSWER_KEPT_S = 60


def admin_wait_s() -> float:
    return 4 * settings.KAFKA_ADMIN_TIMEOUT + 5


@dataclass(frozen=True)
class Target:
    """What a call reaches, in the zone `zone`: a registered cluster of it (`cluster`, its pk),
    the source of a link its engine copies (`source_of`, the link's pk), or, for a check
    before anything is stored, a client config (`config`)."""

    zone: str
    cluster: int | None = None
    source_of: int | None = None
    config: dict[str, str] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "source_of": self.source_of, "config": self.config}


class ZoneAdmin:
    """A `KafkaAdmin` of a cluster in another network zone: each of its calls is made there."""

    failed = False  # the keeper's own client is renewed there when one fails

    def __init__(self, target: Target):
        self.target = target
        self.bootstrap = f"network zone {target.zone}"

    def clear_client_errors(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not callable(getattr(KafkaAdmin, name, None)):
            raise AttributeError(name)
        return partial(call, self.target, "admin", name)


class ZoneRecords:
    """A `Records` of a cluster in another network zone."""

    def __init__(self, target: Target):
        self.target = target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not callable(getattr(Records, name, None)):
            raise AttributeError(name)
        return partial(call, self.target, "records", name)


def call(target: Target, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
    """`method` of the admin (`kind` "admin") or records client ("records") of `target`, made
    by the keeper of its zone; its value, or the error it raised there."""
    wait_s = RECORDS_WAIT_S if kind == "records" else admin_wait_s()
    zone, answer_key = target.zone, f"isthmus:zone-answer:{uuid.uuid4().hex}"
    request = {
        "target": target.as_dict(),
        "kind": kind,
        "method": method,
        "args": wire.encode(list(args)),
        "kwargs": wire.encode(kwargs),
        "answer": answer_key,
        "deadline": time.time() + wait_s,
    }
    try:
        r = blocking_client()
        if not r.exists(keeper_key(zone)):
            raise Unreachable(
                f"No keeper of network zone {zone} is serving: start `manage.py engine` with "
                f"ISTHMUS_ENGINE_NAME={zone} on a host of that zone (it reaches the zone's "
                "clusters for the console)."
            )
        r.rpush(calls_key(zone), seal(request))
        got = r.blpop([answer_key], timeout=wait_s)
    except redis.RedisError as exc:
        raise Unreachable(
            f"Redis did not answer ({exc}), so network zone {zone} could not be asked."
        ) from exc
    if got is None:
        raise Unreachable(
            f"The keeper of network zone {zone} did not answer within {wait_s:g} s: see its "
            "log (`manage.py engine` on a host of that zone)."
        )
    answer = unseal(got[1])
    if "error" in answer:
        raise wire.decode_error(answer["error"])
    return wire.decode(answer["value"])


def calls_key(zone: str) -> str:
    """List: the sealed calls waiting for the zone's keeper."""
    return f"isthmus:zone:{engine_id(name=zone)}:calls"


def keeper_key(zone: str) -> str:
    """The zone's serving keeper (host, pid), gone KEEPER_FRESH_S after it last showed itself."""
    return f"isthmus:zone:{engine_id(name=zone)}:keeper"


def seal(message: dict[str, Any]) -> bytes:
    return Fernet(_key()).encrypt(json.dumps(message).encode())


def unseal(token: bytes | str) -> dict[str, Any]:
    """Raises cryptography's InvalidToken for anything not sealed with this deployment's key."""
    message: dict[str, Any] = json.loads(Fernet(_key()).decrypt(token))
    return message


def _key() -> bytes:
    mac = hmac.new(settings.ENCRYPTION_KEY.encode(), b"isthmus zone calls", hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest())


_clients: dict[str, redis.Redis] = {}


def blocking_client() -> redis.Redis:
    """A client whose requests may wait for the longest answer (the console's own gives up on
    a request after 2 s)."""
    key = f"{settings.REDIS_URL} {settings.REDIS_SENTINELS}"
    if key not in _clients:
        _clients[key] = redis_connect.client(
            settings.REDIS_URL, settings.REDIS_SENTINELS, RECORDS_WAIT_S + 5
        )
    return _clients[key]
