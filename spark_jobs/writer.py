"""The offset-preserving writer: runs in Spark's Python workers, one task per source partition
of a micro-batch, and copies that partition's records into the same mirror partition.

Records keep their key, value (null and empty apart), headers (order and repeats), timestamp
and order; nothing is added. The driver tells each task where the destination partition ends
now and which source offset comes next there, so records already copied by an earlier,
interrupted attempt are skipped and nothing is written twice. Where the next record's source
offset is not the one expected, a translation entry is stored first (see `translation`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from confluent_kafka import Producer

from . import translation

# One result row per source partition a task wrote.
RESULT_SCHEMA = (
    "source_topic string, partition int, records long, bytes long, dest_end long, "
    "run_source long, run_dest long"
)
_RESULT_ARROW = pa.schema(
    [("source_topic", pa.string()), ("partition", pa.int32())]
    + [(name, pa.int64()) for name in ("records", "bytes", "dest_end", "run_source", "run_dest")]
)

# The source columns the writer needs, as selected from Spark's Kafka source.
COLUMNS = (
    "topic",
    "partition",
    "offset",
    "key",
    "value",
    "unix_millis(timestamp) AS timestamp",
    "headers",
)


@dataclass(frozen=True)
class Target:
    """Where one source partition goes, and where its mirror partition stands now."""

    mirror_topic: str
    topic_id: str
    partition: int
    dest_end: int
    next_source: int


class WriteFailed(RuntimeError):
    """A record could not be stored; the stream must restart from the destination's end."""


_producers: dict[tuple, Producer] = {}
_errors: list[str] = []


def _on_error(err, msg) -> None:
    if err is not None:
        _errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")


def producer(config: dict[str, str]) -> Producer:
    """One producer per worker process and config, kept across micro-batches.

    Idempotent with the gap-less guarantee: a record that fails makes the producer fail
    instead of writing the records after it, so the destination never skips one.
    """
    cache_key = tuple(sorted(config.items()))
    if cache_key not in _producers:
        _producers[cache_key] = Producer(
            {
                "linger.ms": 5,
                "batch.size": 1_000_000,
                "queue.buffering.max.kbytes": 65_536,
                "queue.buffering.max.messages": 1_000_000,
                **config,
                "acks": "all",
                "enable.idempotence": True,
                "enable.gapless.guarantee": True,
                "delivery.report.only.error": True,
                "on_delivery": _on_error,
            }
        )
    return _producers[cache_key]


def flush(p: Producer, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while p.flush(1.0) > 0:
        if _errors or time.monotonic() > deadline:
            break
    if _errors:
        first, count = _errors[0], len(_errors)
        _errors.clear()
        raise WriteFailed(f"{count} record(s) not stored, first: {first}")
    if len(p) > 0:
        raise WriteFailed(f"{len(p)} record(s) still unsent after {timeout:.0f} s")


def _produce(p: Producer, *args, **kwargs) -> None:
    while True:
        try:
            p.produce(*args, **kwargs)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            p.poll(0.05)
            if _errors:
                flush(p)


@dataclass
class _Cursor:
    target: Target
    next_source: int
    dest_next: int
    records: int = 0
    bytes: int = 0
    last_entry: translation.Entry | None = None


def write_partitions(
    batches: Iterator[pa.RecordBatch],
    targets: dict[tuple[str, int], Target],
    destination: dict[str, str],
) -> Iterator[pa.RecordBatch]:
    """Copy the records of `batches` (columns `COLUMNS`) to their mirror partitions."""
    p = producer(destination)
    cursors: dict[tuple[str, int], _Cursor] = {}
    for batch in batches:
        columns = batch.to_pydict()
        entries: list[tuple[_Cursor, translation.Entry]] = []
        chosen: list[tuple[_Cursor, int]] = []
        for i, (topic, part, offset) in enumerate(
            zip(columns["topic"], columns["partition"], columns["offset"], strict=True)
        ):
            cursor = cursors.get((topic, part))
            if cursor is None:
                target = targets.get((topic, part))
                if target is None:
                    raise WriteFailed(f"No mirror partition planned for {topic}[{part}].")
                cursor = cursors[topic, part] = _Cursor(target, target.next_source, target.dest_end)
            if offset < cursor.next_source:
                continue  # already in the destination
            if offset != cursor.next_source:
                entry = translation.Entry(offset, cursor.dest_next)
                entries.append((cursor, entry))
                cursor.last_entry = entry
            cursor.next_source = offset + 1
            cursor.dest_next += 1
            chosen.append((cursor, i))
        for cursor, entry in entries:
            _produce(
                p,
                translation.TOPIC,
                key=translation.key(cursor.target.topic_id, cursor.target.partition),
                value=translation.encode(entry),
            )
        if entries:
            flush(p)  # the entries are stored before the records they describe
        keys, values = columns["key"], columns["value"]
        stamps, headers = columns["timestamp"], columns["headers"]
        for cursor, i in chosen:
            value, key, hdrs = values[i], keys[i], headers[i]
            _produce(
                p,
                cursor.target.mirror_topic,
                value=value,
                key=key,
                partition=cursor.target.partition,
                timestamp=stamps[i],
                headers=[(h["key"], h["value"]) for h in hdrs] if hdrs else None,
            )
            cursor.records += 1
            cursor.bytes += (len(value) if value else 0) + (len(key) if key else 0)
    flush(p)
    rows = [
        {
            "source_topic": topic,
            "partition": part,
            "records": cursor.records,
            "bytes": cursor.bytes,
            "dest_end": cursor.dest_next,
            "run_source": cursor.last_entry.source if cursor.last_entry else -1,
            "run_dest": cursor.last_entry.destination if cursor.last_entry else -1,
        }
        for (topic, part), cursor in cursors.items()
    ]
    yield pa.RecordBatch.from_pylist(rows, schema=_RESULT_ARROW)
