"""A mirror's quarantine, the records a fail back (truncate and restore) set aside: the page
that shows them for review, their export as JSON and CSV, and their deletion."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from console.access import require
from console.csv_cells import csv_download, csv_exact
from console.views.actions import confirm
from console.views.mirrors import find_mirror, mirror_url
from replication.core.errors import ReplicationError
from replication.core.text import escaped
from replication.cutover import restore_quarantine
from replication.governance import audit

SHOWN = 200  # records on the page
EXPORTED = 10_000  # records in an export, read into memory at once; and no more bytes than
EXPORTED_BYTES = 64 * 2**20  # of keys, values and headers (a record may be up to ~1 MB)
HEADERS_SHOWN = 20
CSV_HEADER = [
    "partition",
    "offset",
    "timestamp",
    "timestamp_ms",
    "key_encoding",
    "key",
    "value_encoding",
    "value",
    "headers",
]


@require("console.view")
def mirror_quarantine(request, destination, topic):
    """The records a restore of the mirror set aside, for an admin to review before deleting
    them: each with where it was on the topic before."""
    mirror = find_mirror(destination, topic)
    name, records, error = restore_quarantine.quarantine_of(mirror), [], ""
    if name:
        try:
            records = restore_quarantine.read_quarantine(mirror, SHOWN)
        except ReplicationError as exc:
            error = str(exc)
    return render(
        request,
        "mirrors/quarantine.html",
        {
            "mirror": mirror,
            "quarantine": name,
            "records": [
                (r, _when(r), _shown(r.key), _shown(r.value), _headers(r)) for r in records
            ],
            "limit": SHOWN,
            "exported": EXPORTED,
            "exported_bytes": EXPORTED_BYTES,
            "error": error,
        },
    )


def _when(record: restore_quarantine.Quarantined) -> str:
    """Its timestamp as people read it, to the millisecond, in UTC ("" without one)."""
    at = record.at
    return f"{at:%Y-%m-%d %H:%M:%S}.{at.microsecond // 1000:03d}" if at else ""


def _shown(data: bytes | None, null: str = "null") -> str:
    """A key or value as text, inert: undecodable bytes and control characters escaped."""
    if data is None:
        return null
    text = escaped(data.decode("utf-8", errors="backslashreplace"))
    return text if len(text) <= 200 else text[:200] + "…"


def _headers(record: restore_quarantine.Quarantined) -> list[str]:
    """A quarantined record's headers as `name: value` lines, inert as its key and value (a
    producer's are kept as they were: any bytes, or null)."""
    if record.headers_unreadable:
        return ["(unreadable: a header's name is not UTF-8)"]
    shown = [
        f"{_shown(name.encode(), '')}: {_shown(value, '(null)')}"
        for name, value in record.headers[:HEADERS_SHOWN]
    ]
    if len(record.headers) > HEADERS_SHOWN:
        shown.append(f"… {len(record.headers) - HEADERS_SHOWN} more")
    return shown


@require("console.view")
@require_GET
def mirror_quarantine_export(request, destination, topic, fmt):
    """The first records of the quarantine, up to EXPORTED of them and about EXPORTED_BYTES,
    as a JSON or CSV file streamed as it is written (for review elsewhere, or to write back
    what should not have been set aside); each download audited. Where it stops short, it
    says so and why."""
    mirror = find_mirror(destination, topic)
    if not restore_quarantine.quarantine_of(mirror):
        raise Http404(f"Mirror topic {topic!r} has no quarantine topic left to export.")
    try:
        export = restore_quarantine.export_quarantine(
            audit.Actor.from_request(request), mirror, fmt, EXPORTED, EXPORTED_BYTES
        )
    except ReplicationError as exc:
        message = f"{exc} Try the export again once the cluster answers."
        return render(request, "refused.html", {"message": message}, status=exc.status)
    records = map(restore_quarantine.exported, export.records)
    file = f"{export.quarantine}-{timezone.now():%Y%m%dT%H%M%SZ}"
    if fmt == "csv":
        rows = map(_csv_row, records)
        # A last row that is no record (its partition is words) says where it stopped.
        stop = [[f"(export stopped) {export.stopped}"]] if export.stopped else []
        return csv_download(f"{file}.csv", CSV_HEADER, itertools.chain(rows, stop))
    head = {
        "mirror_topic": mirror.mirror_topic,
        "cluster": mirror.destination.name,
        "quarantine_topic": export.quarantine,
        "set_aside_by": (mirror.stop_report or {}).get("actor", ""),
    }
    # Past where it stopped, the rest is read with Kafka's own consumer.
    tail = {"complete": not export.stopped, "stopped": export.stopped}
    response = StreamingHttpResponse(_json(head, records, tail), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{file}.json"'
    return response


def _json(head: dict, records: Iterable[dict], tail: dict) -> Iterator[str]:
    """`{**head, "records": [...], **tail}` as JSON, a record at a time."""
    yield json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "records": ['
    for n, record in enumerate(records):
        yield ("," if n else "") + "\n  " + json.dumps(record, ensure_ascii=False)
    yield "\n ],\n" + json.dumps(tail, indent=1, ensure_ascii=False)[2:]


def _csv_row(record: dict) -> list:
    """A record as a CSV row, byte-exact: a key, value or header value (or header name) that
    `safe_cell` would change is given in base64, and its encoding column (or entry) says so."""
    key, key_encoding = csv_exact(record["key"], record["key_encoding"])
    value, value_encoding = csv_exact(record["value"], record["value_encoding"])
    headers = record["headers"]
    timestamp_ms = record["timestamp_ms"]
    return [
        record["partition"],
        record["offset"],
        record["timestamp"],
        timestamp_ms if timestamp_ms >= 0 else None,  # none: empty, as its timestamp
        key_encoding,
        key,
        value_encoding,
        value,
        "(unreadable)"
        if headers is None
        else json.dumps(_csv_headers(headers), ensure_ascii=False),
    ]


def _csv_headers(headers: list[dict]) -> list[dict]:
    shown = []
    for header in headers:
        name, name_encoding = csv_exact(header["name"], "utf-8", within=True)
        value, value_encoding = csv_exact(header["value"], header["value_encoding"], within=True)
        shown.append(
            {
                "name": name,
                "name_encoding": name_encoding,
                "value": value,
                "value_encoding": value_encoding,
            }
        )
    return shown


@require("mirror.delete")
def mirror_quarantine_delete(request, destination, topic):
    mirror = find_mirror(destination, topic)
    name = restore_quarantine.quarantine_of(mirror)
    if not name and request.method != "POST":
        raise Http404(f"Mirror topic {topic!r} has no quarantine topic left.")
    return confirm(
        request,
        question=f"Delete quarantine topic {name}?",
        verb="delete",
        explanation=f"The records a restore of {mirror.mirror_topic} set aside are deleted from "
        f"{mirror.destination.name} for good. Review them first.",
        run=lambda actor: restore_quarantine.delete_quarantine(actor, mirror),
        done=f"Deleted quarantine topic {name}.",
        back_url=reverse("mirror-quarantine", args=[destination, topic]),
        after_url=mirror_url(mirror),
        typed=name,
    )
