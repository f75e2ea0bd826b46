"""Whether producers still write a topic: its end offsets over the last few minutes, as the lag
readings read them (`lag.store` keeps each mirror's source ends here, the beat's every
`history.SAMPLE_S` seconds) and as an approval's plan reads the topics no mirror samples (a
restore's old primary, a merge flow's source). Kept in Redis, a sorted set by time per topic
(`isthmus:ends:<Kafka cluster id>:<topic>`), for KEEP_S seconds: no cluster is read here."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass

import redis

from replication.core.redis_channel import client

KEEP_S = 300
WINDOW_S = 60  # "still writing": its end offsets moved in the last minute
# Sampled every 10 s, a minute's readings span at least this long (the beat is not exact).
ENOUGH_S = 50


@dataclass(frozen=True)
class Movement:
    """How far a topic's end offsets moved over the readings of about the last minute."""

    records: int  # written over `watched_s` (0: none; -1: no readings to tell)
    watched_s: float  # the time between the first and the last reading compared
    latest_at: float  # when it was last read (0: never)

    @property
    def state(self) -> str:
        """WRITING, QUIET (no record for a minute) or UNKNOWN (not read long enough)."""
        if self.records > 0:
            return "WRITING"
        if self.records == 0 and self.watched_s >= ENOUGH_S:
            return "QUIET"
        return "UNKNOWN"


def _key(cluster_id: str, topic: str) -> str:
    return f"isthmus:ends:{cluster_id}:{topic}"


def keep(pipe, cluster_id: str, topic: str, ends: dict[int, int], at: float) -> None:
    """Add a reading of `topic`'s end offsets (partition: end) to `pipe` (a Redis pipeline)."""
    if not ends:
        return
    key = _key(cluster_id, topic)
    reading = json.dumps({"at": round(at, 3), "ends": {str(p): e for p, e in ends.items()}})
    pipe.zadd(key, {reading: at})
    pipe.zremrangebyscore(key, "-inf", at - KEEP_S)
    pipe.expire(key, KEEP_S)


def keep_now(cluster_id: str, topic: str, ends: dict[int, int], at: float) -> None:
    """Keep one reading at once (a plan's own read of a topic no mirror samples)."""
    pipe = client().pipeline()
    keep(pipe, cluster_id, topic, ends, at)
    # What was read is still shown; only the history misses it.
    with contextlib.suppress(redis.RedisError):
        pipe.execute()


def movement(cluster_id: str, topic: str, now: float | None = None) -> Movement:
    """How many records `topic` took over about the last minute: from the newest reading at
    least WINDOW_S old (else the oldest kept) to the newest."""
    now = time.time() if now is None else now
    try:
        raw: list = client().zrangebyscore(_key(cluster_id, topic), now - KEEP_S, now)
    except redis.RedisError:
        raw = []
    readings = [json.loads(r) for r in raw]
    if not readings:
        return Movement(-1, 0.0, 0.0)
    older = [r for r in readings if r["at"] <= now - WINDOW_S]
    first, last = (older[-1] if older else readings[0]), readings[-1]
    moved = sum(max(0, end - first["ends"].get(p, end)) for p, end in last["ends"].items())
    return Movement(moved, last["at"] - first["at"], last["at"])
