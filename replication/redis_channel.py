"""The Redis connection shared by the console and the streams (control and progress channel)."""

from __future__ import annotations

import redis
from django.conf import settings


def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def ping() -> dict:
    try:
        client().ping()
        return {"ok": True}
    except redis.RedisError as exc:
        return {"ok": False, "error": f"Redis at {settings.REDIS_URL} does not answer: {exc}"}
