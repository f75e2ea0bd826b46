"""Merge flows: a source topic copied over a link into an ordinary, writable topic of the
link's destination, of any name. The shapes of Replicator, and the launch post's aggregate
topics: `topic1` copied both ways between two clusters into the same name (each record once on
each side: the loop rule), a rename (`topic2` into `topic2.replica`), several sources feeding
one topic. Offsets are not kept, so this is never a mirror: no promote, no failover; consumers
read the destination topic as any other. How the engine copies one, exactly once and with its
provenance, is `spark_jobs/merging.py`; the rules are in docs/mirror-engine.md, "Merge flows".

Each state change is one function here, through `move` (a conditional update), audited.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import redis
from django.db import IntegrityError, transaction
from django.utils import timezone

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, TopicNotFound
from infra.processes import wait_for
from replication.core import filters, read_only
from replication.core.errors import ReplicationError, conflict, not_found, unavailable
from replication.core.redis_channel import client
from replication.governance import audit
from replication.kafka.connections import destination_admin, source_admin, unreachable
from replication.models import NAME_VALIDATOR, ClusterLink, MergeFlow, MirrorTopic
from replication.states.mirror_states import Transition
from replication.topics.mirror_checks import TOPIC_NAME, source_topic_missing
from spark_jobs import control, merging

log = logging.getLogger(__name__)
State = MergeFlow.State
Mapping = MergeFlow.Mapping


TRANSITIONS: dict[str, Transition] = {
    "pause": Transition(frozenset({State.ACTIVE}), frozenset({State.PAUSED}), "paused"),
    "resume": Transition(frozenset({State.PAUSED}), frozenset({State.ACTIVE}), "resumed"),
}


def move(flow: MergeFlow, event: str, to: str) -> None:
    """Change the flow's state, if it is in a state `event` leaves from; else refused, saying
    what it is now."""
    transition = TRANSITIONS[event]
    now = timezone.now()
    found = MergeFlow.objects.filter(pk=flow.pk, state__in=transition.sources)
    if not found.update(state=to, state_time=now):
        current = MergeFlow.objects.filter(pk=flow.pk).values_list("state", flat=True).first()
        if current is None:
            raise not_found(f"Merge flow {flow.name!r} was deleted meanwhile.")
        raise conflict(
            f"Merge flow {flow.name!r} is {current}; it cannot be {transition.verb} from that "
            "state. Nothing was changed."
        )
    flow.state, flow.state_time = to, now


def snapshot(flow: MergeFlow) -> dict:
    return {
        "name": flow.name,
        "link": flow.link.name,
        "source_topic": flow.source_topic,
        "destination_topic": flow.destination_topic,
        "mapping": flow.mapping,
        "state": flow.state,
    }


def get_flow(link: ClusterLink, name: str) -> MergeFlow:
    flow = MergeFlow.objects.select_related("link", "destination").filter(link=link, name=name)
    found = flow.first()
    if found is None:
        raise not_found(f"Link {link.name!r} has no merge flow named {name!r}.")
    return found


# --- create ---------------------------------------------------------------------------------


def create_flow(
    actor: audit.Actor,
    link: ClusterLink,
    source_topic: str,
    destination_topic: str | None = None,
    *,
    name: str | None = None,
    mapping: str | None = None,
    validate_only: bool = False,
) -> MergeFlow:
    """Copy `source_topic` over `link` into `destination_topic` (by default the same name),
    an ordinary topic of the destination: used as it is when it exists, else made with the
    source's partitions. Partitions map one to one when the counts are equal (or `mapping`
    says so, which then needs them equal), else by key."""
    destination_topic = destination_topic or source_topic
    name = name or f"{link.name}.{source_topic}"
    target = f"merge flow {name} on link {link.name}"
    with audit.refusals(actor, "flow.create", target):
        _check_request(link, name, source_topic, destination_topic, mapping)
        source, destination = source_admin(link), destination_admin(link)
        partitions, existing = _partitions(
            link, source, destination, source_topic, destination_topic
        )
        chosen = _mapping(mapping, partitions, existing, destination_topic)
        flow = MergeFlow(
            name=name,
            link=link,
            destination=link.destination,
            source_topic=source_topic,
            destination_topic=destination_topic,
            mapping=chosen,
            created_topic=existing is None,
            parts=min(partitions, merging.PARTS),
        )
        if validate_only:
            return flow
        ensure_progress_topic(destination)
        try:
            with transaction.atomic():
                flow.save()
        except IntegrityError as exc:
            raise conflict(
                f"{link.destination.name} has a merge flow named {name!r} already, or link "
                f"{link.name!r} copies {source_topic!r} into {destination_topic!r} already. "
                "Choose another name, or use the flow there. Nothing was changed."
            ) from exc
        if existing is None:
            _create_topic(flow, destination, partitions, mapping)
    audit.record(actor, "flow.create", target, after=snapshot(flow))
    log.info(
        "Created merge flow %s: %s over link %s into %s (%s)",
        name,
        source_topic,
        link.name,
        destination_topic,
        "partition to partition" if flow.mapping == Mapping.ONE_TO_ONE else "by key",
    )
    return flow


def _check_request(
    link: ClusterLink, name: str, source_topic: str, destination_topic: str, mapping: str | None
) -> None:
    """What can be refused before asking a cluster."""
    if not re.fullmatch(NAME_VALIDATOR.regex, name):
        raise ReplicationError(
            f"Invalid merge flow name {name!r}: use 1-200 letters, digits, '.', '_' or '-'."
        )
    for what, topic in (("source", source_topic), ("destination", destination_topic)):
        if not TOPIC_NAME.fullmatch(topic):
            raise ReplicationError(
                f"Invalid {what} topic name {topic!r}: use 1-249 letters, digits, '.', '_' or '-'."
            )
        if filters.internal_topic(topic):
            raise ReplicationError(
                f"{topic!r} is an internal topic (of Kafka, a schema registry, Confluent's "
                "services, MirrorMaker 2 or Isthmus), kept by each cluster for itself; a merge "
                "flow cannot copy it or into it."
            )
    if mapping is not None and mapping not in Mapping.values:
        raise ReplicationError(
            f"Unknown partition mapping {mapping!r}: use one-to-one (source partition p into "
            "destination partition p) or by-key (as Kafka's default partitioner places keys)."
        )
    if link.state == ClusterLink.State.FAILED:
        raise conflict(
            f"Cluster link {link.name!r} has FAILED ({link.error_message}); fix it before "
            "adding merge flows."
        )
    mirror = MirrorTopic.objects.filter(
        destination=link.destination, mirror_topic=destination_topic
    ).first()
    if mirror is not None and mirror.state != MirrorTopic.State.STOPPED:
        raise conflict(
            f"{destination_topic!r} is a mirror topic of link {mirror.link.name!r}, read-only "
            "and an exact copy of its source: a merge flow cannot write into it. Choose "
            "another destination topic, or promote the mirror first. Nothing was changed."
        )


def _partitions(
    link: ClusterLink,
    source: KafkaAdmin,
    destination: KafkaAdmin,
    source_topic: str,
    destination_topic: str,
) -> tuple[int, int | None]:
    """The source topic's partitions, and the destination topic's (None: it does not exist)."""
    try:
        partitions = source.describe_topic(source_topic).partitions
    except TopicNotFound as exc:
        raise source_topic_missing(link, source_topic) from exc
    except KafkaAdminError as exc:
        raise unreachable("source", exc) from exc
    try:
        return partitions, destination.describe_topic(destination_topic).partitions
    except TopicNotFound:
        return partitions, None
    except KafkaAdminError as exc:
        raise unreachable("destination", exc) from exc


def _mapping(asked: str | None, partitions: int, existing: int | None, topic: str) -> str:
    has = partitions if existing is None else existing
    if asked == Mapping.ONE_TO_ONE and has != partitions:
        raise ReplicationError(
            f"Partitions map one to one only between equal counts: the source topic has "
            f"{partitions} and {topic!r} {has}. Use by-key, or give {topic!r} {partitions} "
            "partitions. Nothing was changed."
        )
    if asked is not None:
        return asked
    return Mapping.ONE_TO_ONE if has == partitions else Mapping.BY_KEY


def _create_topic(
    flow: MergeFlow, destination: KafkaAdmin, partitions: int, asked: str | None
) -> None:
    try:
        destination.create_topic(flow.destination_topic, partitions, None, {})
    except KafkaAdminError as exc:
        if "already exists" in str(exc):
            _use_existing(flow, destination, partitions, asked)
            return
        flow.delete()
        raise ReplicationError(
            f"Could not create destination topic {flow.destination_topic!r}: {exc} Nothing "
            "was changed."
        ) from exc


# How long a topic just made (by another flow, or someone else) may take to be known to the
# broker asked: KRaft's brokers learn of it from the controller, after its creation returned.
VISIBLE_S = 15


def _use_existing(
    flow: MergeFlow, destination: KafkaAdmin, partitions: int, asked: str | None
) -> None:
    """The destination topic was made meanwhile (or just before, by another flow, and was not
    yet known when it was looked for): the flow uses it as it is, mapped by what it has."""
    described = wait_for(lambda: destination.describe_topic(flow.destination_topic), VISIBLE_S, 0.2)
    try:
        if described is None:
            raise unavailable(
                f"Destination topic {flow.destination_topic!r} exists, but "
                f"{flow.destination.name} did not describe it within {VISIBLE_S} s. Try again "
                "in a moment. Nothing was changed."
            )
        flow.mapping = _mapping(asked, partitions, described.partitions, flow.destination_topic)
    except ReplicationError:
        flow.delete()
        raise
    flow.created_topic = False
    flow.save(update_fields=["mapping", "created_topic"])


def ensure_progress_topic(admin: KafkaAdmin) -> None:
    """The destination's record of how far each flow copied (written in the flows' own
    transactions): compacted, written only by links."""
    try:
        read_only.ensure_links_topic(
            admin,
            merging.PROGRESS_TOPIC,
            merging.PROGRESS_PARTITIONS,
            {"cleanup.policy": "compact"},
        )
    except KafkaAdminError as exc:
        raise unreachable("destination", exc) from exc


# --- pause, resume, delete ------------------------------------------------------------------


def pause_flow(actor: audit.Actor, flow: MergeFlow) -> MergeFlow:
    return _switch(actor, flow, "pause", State.PAUSED)


def resume_flow(actor: audit.Actor, flow: MergeFlow) -> MergeFlow:
    return _switch(actor, flow, "resume", State.ACTIVE)


def _switch(actor: audit.Actor, flow: MergeFlow, event: str, to: str) -> MergeFlow:
    target = f"merge flow {flow.name} on link {flow.link.name}"
    with audit.refusals(actor, f"flow.{event}", target):
        before = snapshot(flow)
        move(flow, event, to)
    audit.record(actor, f"flow.{event}", target, before=before, after=snapshot(flow))
    log.info("Merge flow %s %s", flow.name, TRANSITIONS[event].verb)
    return flow


def delete_flow(actor: audit.Actor, flow: MergeFlow) -> None:
    """End the flow. Its destination topic stays, with every record copied into it: it is an
    ordinary topic that others may write and read."""
    target = f"merge flow {flow.name} on link {flow.link.name}"
    with audit.refusals(actor, "flow.delete", target):
        before = snapshot(flow)
        claimed, _ = MergeFlow.objects.filter(pk=flow.pk).delete()
        if not claimed:
            raise not_found(f"Merge flow {flow.name!r} was deleted meanwhile.")
    audit.record(actor, "flow.delete", target, before=before)
    log.info("Deleted merge flow %s (topic %s stays)", flow.name, flow.destination_topic)


# --- what a flow does now -------------------------------------------------------------------


@dataclass
class FlowStatus:
    """A flow as the engine reports it: records copied, records left out by the loop rule,
    and per source partition how far it was copied and the lag behind the source."""

    state: str
    records: int = 0
    skipped: int = 0
    error: str = ""
    last_write_ms: int = 0
    records_per_sec: float = 0.0
    latency_ms: int = -1  # commit time less the newest copied record's timestamp; -1 unknown
    partitions: dict[int, dict] = field(default_factory=dict)

    @property
    def lag(self) -> int:
        return sum(p["lag"] for p in self.partitions.values())


def _heartbeat(link: ClusterLink) -> control.LinkHeartbeat:
    try:
        return control.link_heartbeat(client(), str(link.link_id))
    except redis.RedisError:
        return {}


def status(flow: MergeFlow) -> FlowStatus:
    """The flow's status as its link's engine heartbeat last said."""
    return _status(flow, _heartbeat(flow.link))


def statuses(link: ClusterLink) -> dict[str, FlowStatus]:
    """Each of the link's flows, by name, from one read of its heartbeat."""
    heartbeat = _heartbeat(link)
    return {flow.name: _status(flow, heartbeat) for flow in link.flows.all()}


def _status(flow: MergeFlow, heartbeat: control.LinkHeartbeat) -> FlowStatus:
    found = heartbeat.get("flows", {}).get(str(flow.flow_id))
    if flow.state != State.ACTIVE or found is None:
        return FlowStatus(flow.state)
    partitions = {
        int(p): {
            "next": v["next"],
            "source_end": v["source_hw"],
            # What was read past (transaction markers) counts once every record before it
            # is committed: the position only passes markers after the records it read.
            "lag": max(0, v["source_hw"] - max(v["next"], v["read"])) if v["source_hw"] >= 0 else 0,
            # One-to-one: the exact checkpoint (next, dest), and whether others write there.
            **{k: v[k] for k in ("checkpoint", "others") if k in v},
        }
        for p, v in found["partitions"].items()
    }
    return FlowStatus(
        flow.state,
        found["records"],
        found["skipped"],
        found["error"],
        found["last_write_ms"],
        found.get("records_per_sec", 0.0),
        found.get("latency_ms", -1),
        partitions,
    )
