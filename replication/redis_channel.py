"""The Redis connection shared by the console and the streams (control and progress channel)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.conf import settings

from .errors import conflict, unavailable


def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def ping() -> dict:
    try:
        client().ping()
        return {"ok": True}
    except redis.RedisError as exc:
        return {"ok": False, "error": f"Redis at {settings.REDIS_URL} does not answer: {exc}"}


@contextmanager
def only_one(name: str, busy: str, *, hold_s: float = 600) -> Iterator[None]:
    """Run the block in one request at a time, across processes: another one meanwhile is
    refused with `busy` (409), not queued. The lock expires after `hold_s` should its holder die."""
    try:
        lock = client().lock(f"isthmus:only-one:{name}", timeout=hold_s)
        acquired = lock.acquire(blocking=False)
    except redis.RedisError as exc:
        raise unavailable(
            f"Redis at {settings.REDIS_URL} does not answer ({exc}); nothing was changed."
        ) from exc
    if not acquired:
        raise conflict(busy)
    try:
        yield
    finally:
        with contextlib.suppress(redis.RedisError):
            lock.release()
