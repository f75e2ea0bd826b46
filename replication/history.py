"""A short history of each link's throughput and lag and each mirror's lag, for the console's
charts: a sample every SAMPLE_S seconds while the link's stream runs, the last KEEP of them,
kept in Redis as bounded lists (they expire when a link stops being sampled). Read from what
the streams report, never from the clusters."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import redis

from .models import ClusterLink, MirrorTopic
from .redis_channel import client
from .streams import reported_lags, status

SAMPLE_S = 10
KEEP = 180  # half an hour of samples
WINDOW_S = SAMPLE_S * KEEP


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the epoch
    value: float


def _link_key(link: ClusterLink) -> str:
    return f"isthmus:history:{link.link_id}"


def _mirror_key(link: ClusterLink, mirror_topic: str) -> str:
    return f"isthmus:history:{link.link_id}:{mirror_topic}"


def record_all(now: float | None = None) -> None:
    r = client()
    for link in ClusterLink.objects.filter(state=ClusterLink.State.ACTIVE):
        record(link, r, now or time.time())


def record(link: ClusterLink, r: redis.Redis, now: float) -> None:
    """One sample of the link (records copied per second, its total lag) and of each mirror
    its stream runs (total and largest partition lag). Nothing while the stream does not run:
    a chart shows the gap."""
    stream = status(link)
    if stream.state != "RUNNING":
        return
    lags = reported_lags(link)
    samples = {
        _link_key(link): {
            "t": round(now, 1),
            "records_per_sec": stream.records_per_sec,
            "lag": sum(sum(p.values()) for p in lags.values()),
        },
        **{
            _mirror_key(link, mirror): {
                "t": round(now, 1),
                "lag": sum(partitions.values()),
                "max_lag": max(partitions.values(), default=0),
            }
            for mirror, partitions in lags.items()
        },
    }
    pipe = r.pipeline()
    for key, sample in samples.items():
        pipe.rpush(key, json.dumps(sample))
        pipe.ltrim(key, -KEEP, -1)
        pipe.expire(key, WINDOW_S)
    pipe.execute()


def link_series(link: ClusterLink) -> dict[str, list[Sample]]:
    """{"records_per_sec": [...], "lag": [...]}, oldest first."""
    return _series(_link_key(link), ("records_per_sec", "lag"))


def mirror_series(mirror: MirrorTopic) -> dict[str, list[Sample]]:
    """{"lag": [...], "max_lag": [...]}, oldest first."""
    return _series(_mirror_key(mirror.link, mirror.mirror_topic), ("lag", "max_lag"))


def _series(key: str, names: tuple[str, ...]) -> dict[str, list[Sample]]:
    try:
        raw = client().lrange(key, 0, -1)
    except redis.RedisError:
        raw = []
    samples = [json.loads(item) for item in raw]
    return {name: [Sample(s["t"], s[name]) for s in samples] for name in names}
