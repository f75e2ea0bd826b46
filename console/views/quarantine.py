"""A mirror's quarantine, the records a fail back (truncate and restore) set aside: the page
that shows them for review, their export as JSON and CSV, and their deletion."""

from __future__ import annotations

import json

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from console.access import require
from console.csv_cells import csv_download
from console.views.actions import confirm
from console.views.mirrors import find_mirror, mirror_url
from replication.core.errors import ReplicationError
from replication.core.text import escaped
from replication.cutover import restore_quarantine

SHOWN = 200  # records on the page
EXPORTED = 10_000  # records in an export: read into memory at once
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
    """The first EXPORTED records of the quarantine as a JSON or CSV file: for review
    elsewhere, or to write back what should not have been set aside."""
    mirror = find_mirror(destination, topic)
    name = restore_quarantine.quarantine_of(mirror)
    if not name:
        raise Http404(f"Mirror topic {topic!r} has no quarantine topic left to export.")
    try:
        read = restore_quarantine.read_quarantine(mirror, EXPORTED + 1)
    except ReplicationError as exc:
        message = f"{exc} Try the export again once the cluster answers."
        return render(request, "refused.html", {"message": message}, status=exc.status)
    records = [restore_quarantine.exported(r) for r in read[:EXPORTED]]
    file = f"{name}-{timezone.now():%Y%m%dT%H%M%SZ}"
    if fmt == "csv":
        return csv_download(f"{file}.csv", CSV_HEADER, map(_csv_row, records))
    body = {
        "mirror_topic": mirror.mirror_topic,
        "cluster": mirror.destination.name,
        "quarantine_topic": name,
        "set_aside_by": (mirror.stop_report or {}).get("actor", ""),
        "records": records,
        # Past EXPORTED records, the rest is read with Kafka's own consumer.
        "complete": len(read) <= EXPORTED,
    }
    response = HttpResponse(
        json.dumps(body, indent=1, ensure_ascii=False), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{file}.json"'
    return response


def _csv_row(record: dict) -> list:
    headers = record["headers"]
    return [
        *(record[k] for k in CSV_HEADER[:-1]),
        "(unreadable)" if headers is None else json.dumps(headers, ensure_ascii=False),
    ]


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
