"""An approval request's plan: what approving would do, as one typed value (JSON) that the
request page, the API and the command-line tools all show alike. It is made when the request
is asked (kept in `ApprovalRequest.plan_at_request`) and again, live, whenever a pending
request is looked at: the dry run's numbers per topic (a truncate-and-restore's per partition),
the action in words with the clusters by name and the direction (its row's `explain` in
operations.OPERATIONS), whether producers still write the topics it concerns, which consumer
groups read them on each cluster and whether their offsets are synced, and every object it
names."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TypedDict

from infra.kafka_errors import KafkaAdminError
from replication.actions import gateway_moves, plan_groups, plan_words
from replication.actions.asked import Asked
from replication.actions.operations import OPERATIONS
from replication.core.errors import ReplicationError
from replication.cutover.promote import TopicOutcome
from replication.kafka.connections import destination_admin, source_admin
from replication.observe import topic_ends
from replication.topics import consumer_groups


class PartitionPlan(TypedDict):
    """A truncate-and-restore's partition: the offset it is truncated to, the records past it
    set aside, the records copied across from the promoted topic."""

    partition_id: int
    offset_truncated_to: int
    messages_truncated: int
    records_to_copy: int


class TopicPlan(TypedDict):
    """One topic's dry run: its state, lag per partition, why it is refused ("" if not), and
    for a truncate-and-restore its partitions."""

    mirror_topic: str
    error: str
    state: str
    lags: dict[str, int]
    partitions: list[PartitionPlan]


class Producers(TypedDict):
    """Whether producers still write a topic: its end offsets over about the last minute."""

    cluster: str
    topic: str
    state: str  # WRITING, QUIET or UNKNOWN (topic_ends.Movement)
    records: int  # written over watched_s (-1: not read)
    watched_s: int
    words: str


class Plan(TypedDict):
    """What approving a request does (see the module's words), as JSON."""

    read_at: str  # when it was made, ISO 8601 UTC
    summary: str
    source_cluster: str
    destination_cluster: str
    direction: str
    effects: list[str]
    topics: list[TopicPlan]
    producers: list[Producers]
    groups: list[plan_groups.GroupReader]
    problems: list[str]  # what could not be read for it
    objects: list[plan_words.Ref]


def build(asked: Asked, outcomes: list[TopicOutcome]) -> Plan:
    """The plan of `asked`, given its dry run's `outcomes` (made just before)."""
    explained = OPERATIONS[asked.action].explain(asked)
    source, destination = plan_words.names(asked.link)
    groups, problems = plan_groups.readers(asked.link, explained.read, (source, destination))
    producers = [_producers(asked, t, (source, destination), problems) for t in explained.written]
    return {
        "read_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "summary": explained.summary,
        "source_cluster": source,
        "destination_cluster": destination,
        "direction": plan_words.direction(asked.link),
        "effects": [*explained.effects, *filter(None, [gateway_moves.effect(asked)])],
        "topics": [topic_plan(o) for o in outcomes],
        "producers": producers,
        "groups": groups,
        "problems": problems,
        "objects": explained.objects,
    }


def topic_plan(outcome: TopicOutcome) -> TopicPlan:
    return {
        **outcome.as_dict(),  # type: ignore[typeddict-item]
        "partitions": list(getattr(outcome, "partitions", [])),
    }


def _producers(
    asked: Asked, on: plan_words.TopicOn, names: tuple[str, str], problems: list[str]
) -> Producers:
    link = asked.link
    source = on.side == "source"
    cluster_id = link.source_cluster_id if source else link.destination.cluster_id
    name = names[0] if source else names[1]
    down = consumer_groups.not_answering(link, on.side, name)
    if down:
        problems.append(f"The end offsets of {on.topic} on {name} are not read now: {down}")
    elif not on.sampled:  # no lag reading keeps its ends: read them now, for now and later
        try:
            admin = source_admin(link) if source else destination_admin(link)
            info = admin.describe_topics([on.topic]).get(on.topic)
            if info is not None:
                ends = admin.end_offsets(on.topic, info.partitions)
                topic_ends.keep_now(cluster_id, on.topic, ends, time.time())
        except (KafkaAdminError, ReplicationError) as exc:
            problems.append(f"The end offsets of {on.topic} on {name} could not be read: {exc}")
    moved = topic_ends.movement(cluster_id, on.topic)
    watched = round(moved.watched_s)
    return {
        "cluster": name,
        "topic": on.topic,
        "state": moved.state,
        "records": moved.records,
        "watched_s": watched,
        "words": _writes_words(moved, watched, f"{on.topic} on {name}"),
    }


def _writes_words(moved: topic_ends.Movement, watched: int, what: str) -> str:
    if moved.state == "WRITING":
        plural = "record was" if moved.records == 1 else "records were"
        return (
            f"Producers still write {what}: {moved.records} {plural} written in the last "
            f"{watched} s."
        )
    if moved.state == "QUIET":
        return f"No record was written to {what} in the last {watched} s."
    if moved.records < 0:
        return f"Not known whether producers write {what}: its end offsets have not been read yet."
    return (
        f"No record was written to {what} in the {watched} s watched so far: look again in a "
        "minute to know whether producers have stopped."
    )
