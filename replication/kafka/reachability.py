"""Whether each registered cluster answers, as the beat's probe (`tasks.refresh_clusters`, every
30 s) last found it. Kept in Redis so that the overview, the link pages and `/metrics` show it
without asking any cluster themselves: a page or a scrape never waits on a cluster that is down.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass

import redis

from replication.core.redis_channel import client
from replication.kafka.clusters import ClusterHealth, probe_clusters

log = logging.getLogger(__name__)

KEY = "isthmus:cluster-reachability"
# Readings nobody renewed for this long (the beat stopped) say nothing of now: they are dropped,
# and the clusters shown as not known, rather than as answering.
KEEP_S = 300


@dataclass(frozen=True)
class Reading:
    """What the probe found at `at`; `since`: when the cluster began answering (or not) as it
    does now (seconds since the epoch, both)."""

    reachable: bool
    error: str
    at: float
    since: float


def keep(healths: list[ClusterHealth], now: float | None = None) -> dict[str, Reading]:
    """Keep the probe's findings, by the registered cluster id (a cluster registered anew is
    the same cluster). One that answers at an address which now reaches another cluster counts
    as not reachable: its links cannot work there either."""
    now = time.time() if now is None else now
    before = latest()
    found = {}
    for health in healths:
        key = health.cluster.cluster_id
        reachable = health.ok
        was = before.get(key)
        since = was.since if was is not None and was.reachable == reachable else now
        found[key] = Reading(reachable, health.error, now, since)
    try:
        client().set(KEY, json.dumps({k: asdict(r) for k, r in found.items()}), ex=KEEP_S)
    except redis.RedisError as exc:  # the next beat's reading is kept instead
        log.warning("Could not keep the clusters' reachability: %s", exc)
    return found


def latest() -> dict[str, Reading]:
    """The latest readings by cluster id; a cluster left out has not been probed yet (or Redis
    does not answer: nothing is claimed then)."""
    try:
        raw = client().get(KEY)
    except redis.RedisError:
        return {}
    if raw is None:
        return {}
    try:
        return {key: Reading(**value) for key, value in json.loads(raw).items()}
    except (ValueError, TypeError):  # kept by another version: the next beat writes it anew
        return {}


def refresh() -> list[ClusterHealth]:
    """The beat's: probe every registered cluster at once and keep what each said."""
    healths = probe_clusters()
    keep(healths)
    return healths
