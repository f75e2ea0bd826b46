"""A history of each link's throughput and lag, each mirror's lag and each merge flow's lag,
throughput and latency, for the console's charts (lag in records, and the largest lag in
seconds: the recovery point), kept in Redis as bounded lists in two
resolutions: a point every SAMPLE_S seconds for the last hour, and a point every COARSE_S
seconds for the last day (the largest lag within it, the mean throughput). The lag points are
`lag.sample_all`'s readings of both clusters, taken whether the link's stream runs or not; a
mirror neither end answered for has no point (its chart shows a gap). A flow's points are what
the engine last reported of it. Lists of a link, mirror or flow no longer sampled expire."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from replication.core.redis_channel import client
from replication.engine.status import status
from replication.models import ClusterLink, MergeFlow, MirrorTopic
from replication.topics.merge_flows import FlowStatus

SAMPLE_S = 10
COARSE_S = 300
FINE_KEEP = 3600 // SAMPLE_S
COARSE_KEEP = 24 * 3600 // COARSE_S
# name: (seconds shown, seconds between points)
RANGES = {"15m": (900, SAMPLE_S), "1h": (3600, SAMPLE_S), "24h": (24 * 3600, COARSE_S)}
DEFAULT_RANGE = "15m"
# How a coarse point sums up the fine ones within it: the worst lag, the mean throughput.
_COARSE: dict[str, Callable[[list[float]], float]] = {
    "lag": max,
    "max_lag": max,
    "max_lag_s": max,
    "latency_s": max,
    "records_per_sec": lambda v: round(sum(v) / len(v), 1),
}


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the epoch
    value: float


def _link_key(link: ClusterLink) -> str:
    return f"isthmus:history:{link.link_id}"


def _mirror_key(link: ClusterLink, mirror_topic: str) -> str:
    return f"isthmus:history:{link.link_id}:{mirror_topic}"


def _flow_key(flow: MergeFlow) -> str:
    return f"isthmus:history:flow:{flow.flow_id}"


def record(
    link: ClusterLink,
    lags: dict[str, tuple[int, int, int] | None],
    now: float | None = None,
    flows: dict[MergeFlow, FlowStatus] | None = None,
) -> None:
    """A point of the link (records copied per second, its mirrors' total lag and largest lag
    in time), of each mirror in `lags` (its total and largest partition lag, and its largest
    lag in time in ms, -1 unknown; None: not read), and of each merge flow in `flows` the engine
    reports (its lag, records per second and latency)."""
    now = time.time() if now is None else now
    stream = status(link)
    t = math.floor(now * 10) / 10  # never after `now`: a chart drawn at once still shows it
    known = [lag for lag in lags.values() if lag is not None]
    link_point: dict = {"t": t, "records_per_sec": stream.records_per_sec}
    if known or not lags:
        link_point["lag"] = sum(lag[0] for lag in known)
    if times := [lag[2] for lag in known if lag[2] >= 0]:
        link_point["max_lag_s"] = max(times) / 1000
    points = {_link_key(link): link_point}
    for mirror, lag in lags.items():
        if lag is not None:
            point = {"t": t, "lag": lag[0], "max_lag": lag[1]}
            if lag[2] >= 0:
                point["max_lag_s"] = lag[2] / 1000
            points[_mirror_key(link, mirror)] = point
    for flow, found in (flows or {}).items():
        if found.partitions:
            point = {"t": t, "lag": found.lag, "records_per_sec": found.records_per_sec}
            if found.latency_ms >= 0:
                point["latency_s"] = found.latency_ms / 1000
            points[_flow_key(flow)] = point
    r = client()
    pipe = r.pipeline()
    for key, point in points.items():
        _push(pipe, key, point, FINE_KEEP, 3600)
    pipe.execute()
    _coarsen(r, list(points), now)


def _push(pipe, key: str, point: dict, keep: int, expire_s: int) -> None:
    pipe.rpush(key, json.dumps(point))
    pipe.ltrim(key, -keep, -1)
    pipe.expire(key, expire_s)


def _coarsen(r: redis.Redis, keys: list[str], now: float) -> None:
    """Once a COARSE_S period has ended, sum up each series' fine points within it in one
    coarse point (stamped at the period's end)."""
    period = int(now // COARSE_S)
    ended = period - 1
    pipe = r.pipeline()
    for key in keys:
        pipe.lindex(f"{key}:coarse", -1)
        pipe.lrange(key, -(COARSE_S // SAMPLE_S) - 2, -1)
    answers = pipe.execute()
    pipe = r.pipeline()
    for key, last, fine in zip(keys, answers[::2], answers[1::2], strict=True):
        end = (ended + 1) * COARSE_S
        if last is not None and json.loads(last)["t"] >= end:
            continue  # this period is summed up already
        within = [p for p in map(json.loads, fine) if ended * COARSE_S <= p["t"] < end]
        if within:
            _push(pipe, f"{key}:coarse", _summed(within, end), COARSE_KEEP, 24 * 3600 + COARSE_S)
    pipe.execute()


def _summed(within: list[dict], t: float) -> dict:
    """One coarse point, stamped `t`, of the fine points `within` a period."""
    point: dict = {"t": t}
    for name, sum_up in _COARSE.items():
        values = [p[name] for p in within if name in p]
        if values:
            point[name] = sum_up(values)
    return point


def link_series(link: ClusterLink, shown: str = DEFAULT_RANGE) -> dict[str, list[Sample]]:
    """{"records_per_sec": [...], "lag": [...], "max_lag_s": [...]}, oldest first, over the
    range `shown`."""
    return _series(_link_key(link), ("records_per_sec", "lag", "max_lag_s"), shown)


def mirror_series(mirror: MirrorTopic, shown: str = DEFAULT_RANGE) -> dict[str, list[Sample]]:
    """{"lag": [...], "max_lag": [...], "max_lag_s": [...]}, oldest first, over the range
    `shown`."""
    names = ("lag", "max_lag", "max_lag_s")
    return _series(_mirror_key(mirror.link, mirror.mirror_topic), names, shown)


def flow_series(flow: MergeFlow, shown: str = DEFAULT_RANGE) -> dict[str, list[Sample]]:
    """{"lag": [...], "records_per_sec": [...], "latency_s": [...]}, oldest first."""
    return _series(_flow_key(flow), ("lag", "records_per_sec", "latency_s"), shown)


def _series(key: str, names: tuple[str, ...], shown: str) -> dict[str, list[Sample]]:
    window_s, step_s = RANGES[shown]
    try:
        if step_s == SAMPLE_S:
            points = _points(client().lrange(key, -(window_s // step_s) - 1, -1))
        else:
            pipe = client().pipeline()
            pipe.lrange(f"{key}:coarse", -(window_s // step_s) - 1, -1)
            pipe.lrange(key, -(COARSE_S // SAMPLE_S) - 2, -1)
            coarse, fine = pipe.execute()
            points = _with_unsummed(_points(coarse), _points(fine))
    except redis.RedisError:
        points = []
    return {name: [Sample(p["t"], p[name]) for p in points if name in p] for name in names}


def _points(raw: list) -> list[dict]:
    return [json.loads(item) for item in raw]


def _with_unsummed(coarse: list[dict], fine: list[dict], now: float | None = None) -> list[dict]:
    """The coarse points, then the fine points after them summed up per period as `_coarsen`
    will sum them: the period under way (stamped at its last point, so a chart ending now shows
    it) and one ended but not summed up yet. Without them a day's chart, and its peak, would
    miss the last minutes' readings."""
    now = time.time() if now is None else now
    after = coarse[-1]["t"] if coarse else float("-inf")
    periods: dict[int, list[dict]] = {}
    for point in fine:
        if point["t"] >= after:
            periods.setdefault(int(point["t"] // COARSE_S), []).append(point)
    for period, within in sorted(periods.items()):
        end = (period + 1) * COARSE_S
        coarse.append(_summed(within, end if end <= now else within[-1]["t"]))
    return coarse
