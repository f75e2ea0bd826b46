"""What the engine is asked to run: each link's mirror set (its mirrors and merge flows to copy
now, under a generation that grows with each change) and its spec (where to read, where to
write), written to Redis for the engine to take up; the control lock under which a link's set
is read and published; and whether the engine has stopped writing a mirror left out of a set
(`stopped_writing`, which a promote waits for).
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager

import redis

from infra.kafka_admin import KafkaAdmin
from replication.core import link_configs, read_only, redis_channel
from replication.core.redis_channel import client
from replication.engine import process
from replication.kafka.connections import destination_admin
from replication.models import ClusterLink, MergeFlow
from replication.schemas import schema_links
from replication.states.mirror_states import COPYING
from spark_jobs import batch_copier, control, translation

log = logging.getLogger(__name__)


def wanted_mirrors(link: ClusterLink) -> dict[str, control.MirrorSpec]:
    """The mirrors the link's stream should run now."""
    if not _copies(link):
        return {}
    return {
        m.mirror_topic: {"source_topic": m.source_topic}
        for m in link.mirrors.filter(state__in=COPYING)
    }


def wanted_flows(link: ClusterLink) -> dict[str, control.FlowSpec]:
    """The merge flows the link's stream should run now, by id."""
    if not _copies(link):
        return {}
    active = link.flows.filter(state=MergeFlow.State.ACTIVE).select_related("link__destination")
    return {str(f.flow_id): flow_spec(f) for f in active}


def _copies(link: ClusterLink) -> bool:
    """Whether the link may copy now: ACTIVE, and, if source-initiated, its source half made."""
    return link.state == ClusterLink.State.ACTIVE and not link.waits_for_source_half


def flow_spec(flow: MergeFlow) -> control.FlowSpec:
    """What the engine needs to copy the flow (see spark_jobs/merging.py)."""
    return {
        "id": str(flow.flow_id),
        "name": flow.name,
        "source": flow.source_topic,
        "destination": flow.destination_topic,
        "mapping": flow.mapping,
        "parts": flow.parts,
        "source_cluster_id": flow.link.source_cluster_id,
        "destination_cluster_id": flow.link.destination.cluster_id,
    }


def publish(link: ClusterLink, r: redis.Redis) -> int:
    """Tell the engine which mirrors and merge flows of the link to run; returns the
    generation of that set.

    The generation grows by one each time the set changes. The engine reports the generation
    it is running in the link's heartbeat, once it no longer writes any mirror the set left out:
    that is how a promote knows no writer is left (see `stopped_writing`).
    """
    return publish_set(link, r, wanted_mirrors(link), wanted_flows(link))


def publish_set(
    link: ClusterLink,
    r: redis.Redis,
    mirrors: dict[str, control.MirrorSpec],
    flows: dict[str, control.FlowSpec],
) -> int:
    """`publish` of a set already read (the supervisor reads it under the control lock)."""
    key = control.mirrors_key(str(link.link_id))
    published: control.MirrorSet | None = control.read_json(r, key)
    if (
        published
        and (published.get("mirrors"), published.get("flows", {})) == (mirrors, flows)
        and "generation" in published
    ):
        return published["generation"]
    generation = r.incr(_generation_key(str(link.link_id)))
    mirror_set: control.MirrorSet = {"mirrors": mirrors, "flows": flows, "generation": generation}
    control.write_json(r, key, mirror_set)
    process.wake_engine(r, link.engine)
    return generation


def _generation_key(link_id: str) -> str:
    return f"isthmus:stream:{link_id}:generation"


def link_spec(link: ClusterLink) -> control.LinkSpec:
    """What the engine needs to run a link: where to read, where to write."""
    spec: control.LinkSpec = {
        "link_id": str(link.link_id),
        "link_name": link.name,
        "source": link.source_client_config(),
        "destination": link.destination.connection_config(),
        "path": (link_configs.effective(link.configs, "mirror.copy.path") or "BATCH").lower(),
    }
    schemas = schema_links.engine_spec(link)
    if schemas:
        spec["schemas"] = schemas  # records wait for their schemas (spark_jobs.schema_gate)
    return spec


def copy_path(link: ClusterLink) -> tuple[str, str]:
    """The path the engine copies the link's mirrors on ("batch" or "record"), and why it is
    not the one the link's mirror.copy.path asks for ("" when it is)."""
    try:
        spec = link_spec(link)
    except (RuntimeError, ValueError):  # secrets that no longer decrypt: the engine cannot run it
        return "record", "its credentials cannot be read"
    return batch_copier.path(spec)


def publish_link(link: ClusterLink, r: redis.Redis, run: bool) -> None:
    """Add the link to its engine (or change its spec), or take it out."""
    link_id, key = str(link.link_id), control.links_key(process.engine_id(name=link.engine))
    if not run:
        if r.hdel(key, link_id):
            process.wake_engine(r, link.engine)
        return
    spec, engine_key = link_spec(link), process.engine_key()
    current = r.hget(key, link_id)
    if current is not None and control.digest_of(current) == control.digest(engine_key, spec):
        return
    ensure_translation_topic(destination_admin(link))
    if current is None:  # a heartbeat left from an earlier run says nothing of this one
        r.delete(control.heartbeat_key(link_id), control.progress_key(link_id))
    r.hset(key, link_id, control.seal(engine_key, spec))
    process.wake_engine(r, link.engine)


def control_lock(link: ClusterLink, *, wait: float | None = None) -> AbstractContextManager[bool]:
    """The link's control lock: the supervisor holds it while it reads the mirrors to run and
    publishes them, so a state change made under it cannot be overwritten by a stale set.
    Yields whether it was acquired (always, when `wait` is given and the lock came free)."""
    return redis_channel.held(f"stream:{link.link_id}:supervisor", 120, wait=wait)


def publish_now(link: ClusterLink) -> None:
    """New mirrors of a link the engine runs: their set published at once, not at the beat's
    next round (within 2 s). A link it does not run yet starts at that round, as ever; Redis
    not answering leaves it to that round too."""
    try:
        r = client()
        if r.hexists(control.links_key(process.engine_id(name=link.engine)), str(link.link_id)):
            publish(link, r)
    except redis.RedisError as exc:
        log.warning("Could not hand link %s's mirrors to the engine yet: %s", link.name, exc)


def stopped_writing(link: ClusterLink, mirror_topic: str, generation: int) -> bool:
    """Whether nothing can write `mirror_topic` for the link any more: its engine does not run,
    runs nothing of the link, or has taken up mirror set `generation` (or a later one) without
    that mirror."""
    link_id = str(link.link_id)
    r = client()
    if process.engine_pid(r, link.engine) is None:
        return True
    heartbeat = control.link_heartbeat(r, link_id)
    if not heartbeat:  # the engine never ran the link (or Redis lost its heartbeat)
        runs = process.engine_links(r, link.engine)
        return runs is not None and link_id not in runs
    if heartbeat.get("state") == "stopped":
        # A runner starting anew says so before it reads the mirror set, which no longer
        # holds the mirror.
        return True
    return (
        heartbeat.get("generation", 0) >= generation
        and mirror_topic not in heartbeat.get("mirrors", [])
        and heartbeat.get("state") in ("running", "stopping", "failed")
    )


def ensure_translation_topic(admin: KafkaAdmin) -> None:
    """The destination's offset translation topic: kept forever, written only by links."""
    read_only.ensure_links_topic(
        admin, translation.TOPIC, 1, {"retention.ms": "-1", "cleanup.policy": "delete"}
    )
