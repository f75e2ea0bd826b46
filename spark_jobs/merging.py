"""Merge flows in the engine: a source topic copied into an ordinary, writable destination topic
of any name (the same name for active-active, another for a rename, one topic fed by several
flows for an aggregate), exactly once, with the record's origin in a header.

A flow is copied by `flow_copy.FlowCopy` threads (one per part of it), started by the link's
copier in whichever slot holds the part. This module is the flow's rules and the names the console
shares with the engine (the progress topic, provenance, parts); the copy itself is `flow_copy`.
Unlike a mirror, offsets are not kept: the destination topic has writers of its
own. So the rules differ (docs/mirror-engine.md, "Merge flows"):

- Exactly once across crashes: each batch is one Kafka transaction holding the copied records
  and, in the same transaction, how far each source partition was copied (`PROGRESS_TOPIC` on
  the destination). A copy (re)starts with `init_transactions` under the flow's own
  transactional id, which fences any earlier holder and aborts what it left open, and only
  then reads its progress: what it resumes from is exactly what was committed.
- Provenance: a record keeps its key, value, headers and timestamp, and gains an `ORIGIN`
  header (origin cluster id, topic, partition, offset, timestamp) unless it has one already
  (copied on from elsewhere: it keeps where it was first written).
- The loop rule: a record whose origin is the destination cluster is never copied there.
- Partitions: one to one when the flow says so (equal counts when it was created), else by the
  record's key as Java's default partitioner would (murmur2; a record without a key anywhere).
- Checkpoints, for consumer offset sync (replication/topics/flow_offsets.py): with one-to-one
  mapping, the flow keeps per source partition an exact pair `(next, dest)`: every record copied
  from below `next` lies below `dest` in the same destination partition, and every later one at or
  above it. Delivery reports give `dest` once a transaction commits (its commit flushes them),
  so the pair written with the progress is the one before the transaction: older, still exact.
  A destination partition where others wrote between the flow's records is reported
  (`others`): a place in the source then stands for no place there.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Sequence
from typing import NotRequired, TypedDict

from confluent_kafka import Consumer, KafkaError, TopicPartition

from infra import consuming
from infra.consuming import Headers

from . import payloads

PROGRESS_TOPIC = "_isthmus-flow-progress"
# A flow is copied in parts, each by a slot of its own where there are enough: part k copies the
# source partitions p with p % parts == k, under a transactional id of its own. The count is
# fixed when the flow is made (at most PARTS, at most the source's partitions), so a partition
# never changes part and each part's id fences every earlier writer of its partitions.
PARTS = 4
PROGRESS_PARTITIONS = 10  # flows spread over them: one flow's open transaction delays no other
ORIGIN = "isthmus.origin"  # cluster id,topic,partition,offset,timestamp


class Progress(TypedDict):
    """How far a source partition of a flow was copied, as `PROGRESS_TOPIC` holds it."""

    next: int  # the source offset copied next
    checkpoint: NotRequired[Sequence[int] | None]  # one to one: (next, dest), where known
    at: NotRequired[int]  # when it was committed (ms)


class Retry(RuntimeError):
    """The copy must start again from what was committed (its clients made anew)."""


def transactional_id(flow_id: str, part: int = 0, parts: int = 1) -> str:
    return f"_isthmus-flow-{flow_id}" + (f"-{part}" if parts > 1 else "")


def part_key(flow: payloads.FlowPart) -> str:
    """A flow part's key in a slot's report: "<flow id>/<part>"."""
    return f"{flow['id']}/{flow.get('part', 0)}"


def part_of(partition: int, flow: payloads.FlowPart) -> bool:
    """Whether the flow part copies this source partition."""
    return partition % flow.get("parts", 1) == flow.get("part", 0)


def progress_key(flow_id: str, partition: int) -> bytes:
    return f"{flow_id}/{partition}".encode()


def progress_partition(flow_id: str, partitions: int = PROGRESS_PARTITIONS) -> int:
    return zlib.crc32(flow_id.encode()) % partitions


def origin_of(headers: Headers | None) -> str | None:
    """The origin cluster id a record's provenance header names, if it has one."""
    for name, value in headers or ():
        if name == ORIGIN and value:
            text = value if isinstance(value, str) else value.decode(errors="replace")
            return text.split(",", 1)[0]
    return None


def provenance(cluster_id: str, topic: str, partition: int, offset: int, timestamp: int) -> bytes:
    return provenance_prefix(cluster_id, topic, partition) + b"%d,%d" % (offset, timestamp)


def provenance_prefix(cluster_id: str, topic: str, partition: int) -> bytes:
    """What every provenance of a source partition's records starts with."""
    return f"{cluster_id},{topic},{partition},".encode()


def read_progress(
    config: dict[str, str], flow_id: str, timeout: float = 60.0
) -> dict[int, Progress]:
    """How far each source partition of the flow was copied, as committed: {partition:
    {"next": source offset, "checkpoint": [next, dest] or absent}}. Reads the flow's partition
    of the progress topic, read committed, until its position passes the high watermark it had
    when the read began: every transaction open there then (other flows', other parts') has
    ended, and the position passes their markers. Not to the end a committed reader is told
    (the last stable offset): what this part committed after another's transaction opened lies
    beyond it. Not until an end-of-partition event: a committed reader gets one only when
    nobody is writing, which a busy flow sharing the partition never allows."""
    reader = {**config, "group.id": "isthmus-flow-progress-reader", "enable.auto.commit": False}
    watermarks = Consumer({**reader, "isolation.level": "read_uncommitted"})
    consumer = Consumer({**reader, "isolation.level": "read_committed"})
    try:
        topic = consumer.list_topics(PROGRESS_TOPIC, timeout=timeout).topics[PROGRESS_TOPIC]
        if topic.error is not None:
            if topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return {}
            raise Retry(f"cannot read {PROGRESS_TOPIC}: {topic.error.str()}")
        tp = TopicPartition(PROGRESS_TOPIC, progress_partition(flow_id, len(topic.partitions)))
        low, high = watermarks.get_watermark_offsets(tp, timeout=timeout)
        found: dict[int, Progress] = {}
        if high <= low:
            return found
        consumer.assign([TopicPartition(tp.topic, tp.partition, low)])
        prefix = f"{flow_id}/".encode()
        deadline = time.monotonic() + timeout
        while consumer.position([tp])[0].offset < high:
            if time.monotonic() > deadline:
                raise Retry(f"reading {PROGRESS_TOPIC} took over {timeout:.0f} s")
            for msg in consuming.take(consumer, 10_000, 0.2):
                if error := msg.error():
                    raise Retry(f"cannot read {PROGRESS_TOPIC}: {error.str()}")
                key, value = msg.key(), msg.value()
                if key and key.startswith(prefix):
                    if value is None:
                        raise Retry(f"{PROGRESS_TOPIC} holds no progress at {key.decode()}")
                    found[int(key[len(prefix) :])] = json.loads(value)
        return found
    finally:
        watermarks.close()
        consumer.close()
