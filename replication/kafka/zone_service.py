"""The keeper's side of `zone_calls.py`: the calls the console sends to this network zone, made
here against the zone's clusters and answered through Redis. `manage.py engine` serves them
while it keeps the zone's engine.

It serves only what is its zone's: a registered cluster of the zone, the source of a link the
zone's engine copies, or a client config the console is checking before it stores it (a
source-initiated link's, a cluster's being registered in the zone). A call past its deadline
(its caller has given up) is dropped unmade, so nothing queued while no keeper served runs
later; one not sealed with the deployment's key is dropped and logged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis
from confluent_kafka import KafkaException
from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db import close_old_connections
from django.utils.module_loading import import_string

from infra import wire
from infra.kafka_errors import KafkaAdminError
from replication.kafka import zone_calls
from replication.kafka.connections import connect
from replication.models import ClusterLink, KafkaCluster

log = logging.getLogger(__name__)

WORKERS = 4  # calls made at once: a slow one (a read of records) holds up none of the others


def serve(zone: str, stopping: threading.Event) -> None:
    """Answer the zone's calls until `stopping` is set."""
    r = zone_calls.blocking_client()
    said = 0.0
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="zone-call") as pool:
        while not stopping.is_set():
            try:
                r.set(
                    zone_calls.keeper_key(zone),
                    json.dumps({"host": settings.HOST_NAME, "pid": os.getpid()}),
                    ex=zone_calls.KEEPER_FRESH_S,
                )
                got = r.blpop([zone_calls.calls_key(zone)], timeout=1)
            except redis.RedisError:
                if time.monotonic() - said > 60:
                    said = time.monotonic()
                    log.warning("Redis does not answer: zone %s's calls wait", zone, exc_info=True)
                stopping.wait(1)
                continue
            if got is not None:
                pool.submit(_answer, r, zone, got[1])
        with contextlib.suppress(redis.RedisError):
            r.delete(zone_calls.keeper_key(zone))


def _answer(r: redis.Redis, zone: str, sealed: bytes | str) -> None:
    try:
        request = zone_calls.unseal(sealed)
    except InvalidToken:
        log.warning("A call to zone %s not sealed with this deployment's key was dropped", zone)
        return
    if time.time() > request["deadline"]:
        log.info("A call to zone %s came after its caller gave up; not made", zone)
        return
    try:
        value = _make(zone, request)
        answer: dict[str, Any] = {"value": wire.encode(value)}
    except (KafkaAdminError, KafkaException) as exc:  # the caller gets it as it was raised
        answer = {"error": wire.encode_error(exc)}
    except Exception:  # the keeper's to mend: its caller is told where to look, not Python's words
        log.exception("A call to zone %s (%s) failed", zone, request["method"])
        failed = KafkaAdminError(
            f"The keeper of network zone {zone} could not make the call "
            f"{request['method']}: its log (manage.py engine, on a host of the zone) says why."
        )
        answer = {"error": wire.encode_error(failed)}
    finally:
        close_old_connections()
    try:
        r.rpush(request["answer"], zone_calls.seal(answer))
        r.expire(request["answer"], zone_calls.ANSWER_KEPT_S)
    except redis.RedisError:
        log.warning("Could not answer a call to zone %s", zone, exc_info=True)


def _make(zone: str, request: dict[str, Any]) -> Any:
    config = _client_config(zone, request["target"])
    kind, method = request["kind"], request["method"]
    if kind == "admin":
        client: Any = connect(config)
    elif kind == "records":
        client = import_string(settings.ISTHMUS_KAFKA_RECORDS)(config)
    else:
        raise KafkaAdminError(f"{kind!r} is not a kind of call a zone makes.")
    if method.startswith("_") or not callable(getattr(client, method, None)):
        raise KafkaAdminError(f"{method!r} is not a call a zone makes.")
    return getattr(client, method)(*wire.decode(request["args"]), **wire.decode(request["kwargs"]))


def _client_config(zone: str, target: dict[str, Any]) -> dict[str, str]:
    if target["cluster"] is not None:
        cluster = KafkaCluster.objects.filter(pk=target["cluster"], engine=zone).first()
        if cluster is None:
            raise KafkaAdminError(f"That cluster is not registered in network zone {zone}.")
        return cluster.connection_config()
    if target["source_of"] is not None:
        link = ClusterLink.objects.filter(pk=target["source_of"], engine=zone).first()
        if link is None:
            raise KafkaAdminError(f"That link is not copied by network zone {zone}'s engine.")
        return link.source_client_config()
    config: dict[str, str] = target["config"]
    return config
