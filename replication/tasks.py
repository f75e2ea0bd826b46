"""Celery tasks: thin wrappers that load objects and call the domain functions."""

import logging

from celery import shared_task

from . import redis_channel, syncers
from .clusters import probe_clusters

log = logging.getLogger(__name__)


@shared_task
def refresh_clusters() -> dict[str, dict]:
    """Probe every registered cluster and log the ones that are unreachable or changed."""
    report = {}
    for health in probe_clusters():
        if health.error:
            log.warning("Cluster %s: %s", health.cluster.name, health.error)
        report[health.cluster.name] = health.as_dict()
    return report


@shared_task
def sync_links() -> None:
    """Run the links' due syncers; one run at a time however many workers there are."""
    lock = redis_channel.client().lock("isthmus:sync-links", timeout=120, blocking=False)
    if not lock.acquire():
        return
    try:
        syncers.run_due_syncs()
    finally:
        lock.release()
