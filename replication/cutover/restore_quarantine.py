"""The quarantine a truncate-and-restore leaves on the old primary: the records it set aside
(what the promoted topic lacks), read back for an admin's review with where each was in the
topic before the restore (from the headers the restore wrote), and deleted once reviewed.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaException
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from infra.kafka_errors import KafkaAdminError, TopicNotFound
from replication.core.errors import not_found, unavailable
from replication.cutover.restore import KIND
from replication.governance import audit
from replication.kafka.connections import cluster_admin, records
from replication.models import MirrorTopic, StopReport

log = logging.getLogger(__name__)


Header = tuple[str, bytes | None]


@dataclass(frozen=True)
class Quarantined:
    """A record a restore set aside, and where it was in the topic (`offset` None when the
    record does not say, as one the restore did not write would not), with its headers as it
    holds them (a value may be any bytes, or null: a producer's are copied as they were)."""

    partition: int
    offset: int | None
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    headers_unreadable: bool = False  # a header's name is not UTF-8: the client cannot read it

    @property
    def size(self) -> int:
        """The bytes of its key, value and headers (as `kafka_copy.record_size` counts them)."""
        carried = sum(len(name.encode()) + len(value or b"") for name, value in self.headers)
        return len(self.key or b"") + len(self.value or b"") + carried

    @property
    def at(self) -> datetime | None:
        """Its timestamp as a time in UTC (None: the record has none, or an impossible one)."""
        if self.timestamp < 0:
            return None
        try:
            return datetime.fromtimestamp(self.timestamp / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            return None


def exported(record: Quarantined) -> dict[str, Any]:
    """A record as the quarantine's JSON and CSV exports write it: its key, value and header
    values as UTF-8 text where they are (encoding "utf-8"), else in base64 (encoding "base64"),
    null as null; its timestamp in milliseconds and in words (ISO 8601, UTC)."""
    at = record.at
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp_ms": record.timestamp,
        "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z") if at else None,
        **_data("key", record.key),
        **_data("value", record.value),
        "headers": None
        if record.headers_unreadable
        else [{"name": name, **_data("value", value)} for name, value in record.headers],
    }


def _data(name: str, data: bytes | None) -> dict[str, str | None]:
    if data is None:
        return {name: None, f"{name}_encoding": None}
    try:
        return {name: data.decode("utf-8"), f"{name}_encoding": "utf-8"}
    except UnicodeDecodeError:
        return {name: base64.b64encode(data).decode("ascii"), f"{name}_encoding": "base64"}


def quarantine_of(mirror: MirrorTopic) -> str:
    """The quarantine topic a restore of `mirror` left on its cluster; "" if none is left."""
    report = mirror.stop_report or {}
    if report.get("kind") != KIND or report.get("quarantine_deleted_at"):
        return ""
    return report.get("quarantine", "")


def _left_quarantine(mirror: MirrorTopic) -> str:
    name = quarantine_of(mirror)
    if not name:
        raise not_found(f"Mirror topic {mirror.mirror_topic!r} has no quarantine topic left.")
    return name


def read_quarantine(
    mirror: MirrorTopic, limit: int = 200, max_bytes: int | None = None
) -> list[Quarantined]:
    """Its first `limit` records, each with its partition, offset and timestamp on the topic
    before the restore; with `max_bytes`, none more once those read hold that many bytes (the
    record that reaches it is the last)."""
    name = _left_quarantine(mirror)
    try:
        found = records(mirror.destination).read_head(
            name, mirror.num_partitions, limit, max_bytes=max_bytes
        )
    except (KafkaException, KafkaAdminError) as exc:  # the latter: from another network zone
        raise unavailable(f"Quarantine topic {name!r} cannot be read: {exc}") from exc
    return [_quarantined(msg) for msg in found]


@dataclass(frozen=True)
class Export:
    """The quarantine's records as an export holds them, and why it holds no more ("" when it
    holds them all)."""

    quarantine: str
    records: list[Quarantined]
    stopped: str


def export_quarantine(
    actor: audit.Actor, mirror: MirrorTopic, fmt: str, limit: int, max_bytes: int
) -> Export:
    """Its first records for download, at most `limit` of them and about `max_bytes` bytes:
    bulk business data leaving the cluster, so each export is audited (and refused when the
    audit trail cannot be written)."""
    target = f"mirror {mirror.mirror_topic}"
    with audit.refusals(actor, "mirror.quarantine_export", target):
        name = _left_quarantine(mirror)
        read = read_quarantine(mirror, limit + 1, max_bytes)
    kept = read[:limit]
    rest = (
        f"Read the rest with Kafka's own consumer (kafka-console-consumer --topic {name} "
        "--from-beginning --property print.headers=true)."
    )
    stopped = ""
    if len(read) > limit:
        stopped = f"The export stopped at {limit:,} records: the quarantine holds more. {rest}"
    elif sum(r.size for r in read) >= max_bytes:
        size = filesizeformat(max_bytes).replace("\xa0", " ")
        stopped = (
            f"The export stopped after {len(kept):,} records, at {size} of "
            f"keys, values and headers: the quarantine may hold more. {rest}"
        )
    said = f"Exported {len(kept):,} records of {name} as {fmt.upper()}."
    audit.record(actor, "mirror.quarantine_export", target, message=f"{said} {stopped}".strip())
    return Export(name, kept, stopped)


def _quarantined(msg) -> Quarantined:
    try:
        headers: tuple[Header, ...] = tuple(msg.headers() or ())
        unreadable = False
    except UnicodeDecodeError:  # confluent-kafka decodes the names, and gives up on one
        headers, unreadable = (), True
    return Quarantined(
        partition=_origin_number(headers, "partition", msg.partition()),
        offset=_origin_number(headers, "offset", None),
        timestamp=_origin_number(headers, "timestamp", msg.timestamp()[1]),
        key=msg.key(),
        value=msg.value(),
        headers=headers,
        headers_unreadable=unreadable,
    )


def _origin_number(headers: tuple[Header, ...], name: str, default):
    """The number the restore wrote in header `isthmus.origin.<name>`, else `default`. The
    restore adds its own after the headers the record carried, so the last of that name is
    its; an earlier one (or a last one that is not a number: null, not UTF-8, anything) is a
    producer's, and read as no number rather than trusted or failed on."""
    values = [v for k, v in headers if k == f"isthmus.origin.{name}"]
    last = values[-1] if values else None
    if isinstance(last, bytes) and _NUMBER.fullmatch(last):
        return int(last)
    return default


_NUMBER = re.compile(rb"-?[0-9]{1,19}")  # an offset, partition or timestamp: 64 bits at most


def delete_quarantine(actor: audit.Actor, mirror: MirrorTopic) -> None:
    """Delete the quarantine once an admin has reviewed it (audited; the report keeps that
    it was deleted, when and by whom)."""
    target = f"mirror {mirror.mirror_topic}"
    with audit.refusals(actor, "mirror.quarantine_delete", target):
        name = _left_quarantine(mirror)
        try:
            with contextlib.suppress(TopicNotFound):  # deleted by other means: as wanted
                cluster_admin(mirror.destination).delete_topic(name)
        except KafkaAdminError as exc:
            raise unavailable(f"Quarantine topic {name!r} could not be deleted: {exc}") from exc
    report: StopReport = {
        **(mirror.stop_report or {}),
        "quarantine_deleted_at": timezone.now().isoformat(),
        "quarantine_deleted_by": actor.name,
    }
    mirror.stop_report = report
    MirrorTopic.objects.filter(pk=mirror.pk).update(stop_report=report)
    audit.record(actor, "mirror.quarantine_delete", target, message=f"Deleted {name}.")
    log.info("Quarantine %s of %s deleted by %s", name, mirror.mirror_topic, actor.name)
