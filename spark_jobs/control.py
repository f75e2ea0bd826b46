"""The Redis keys a link stream and the console share: the mirrors to run (console → stream),
and the stream's heartbeat and per-partition progress (stream → console).

Redis holds nothing that cannot be rebuilt: the console republishes the mirror set every few
seconds, and a stream finds where each partition stands from the destination cluster.
"""

from __future__ import annotations

import json

import redis

SPEC_ENV = "ISTHMUS_LINK_SPEC"


def mirrors_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:mirrors"


def heartbeat_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:heartbeat"


def progress_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:progress"


def read_json(client: redis.Redis, key: str) -> dict | None:
    raw = client.get(key)
    return json.loads(raw) if raw else None


def write_json(client: redis.Redis, key: str, value: dict) -> None:
    client.set(key, json.dumps(value, sort_keys=True))
