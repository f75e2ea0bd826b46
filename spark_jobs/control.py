"""The Redis keys a link's application, its copier tasks and the console share.

Console → application: the mirrors to run (`mirrors_key`, with a generation).
Application → tasks: the current epoch (`epoch_key`: one per Spark job the application runs)
and each task's partitions (`assignment_key`).
Tasks → application: each task's heartbeat and progress (`task_key`), kept alive by expiry.
Application → console: the link's heartbeat and per-partition progress.

Redis holds nothing that cannot be rebuilt: the console republishes the mirror set every few
seconds, the application its epoch and assignments every loop, and a task finds where each
partition stands from the destination cluster.
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


def epoch_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:epoch"


def assignment_key(link_id: str, slot: int) -> str:
    return f"isthmus:stream:{link_id}:assignment:{slot}"


def task_key(link_id: str, epoch: str, slot: int) -> str:
    return f"isthmus:stream:{link_id}:task:{epoch}:{slot}"


def task_pattern(link_id: str) -> str:
    """Every task heartbeat of the link, of any epoch."""
    return f"isthmus:stream:{link_id}:task:*"


def read_json(client: redis.Redis, key: str) -> dict | None:
    raw = client.get(key)
    return json.loads(raw) if raw else None


def write_json(client: redis.Redis, key: str, value: dict) -> None:
    client.set(key, json.dumps(value, sort_keys=True))
