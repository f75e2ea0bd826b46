"""The quarantine page of a restored mirror reads records whose headers a producer wrote as it
pleased (a restore copies them as they were, then adds its own `isthmus.origin.*`): a header
that is not UTF-8, null, or not a number shows escaped, "(null)" or as no origin, and the page
answers (it was a 500). Timestamps show as times; the quarantine exports as JSON (bytes that are
not text in base64) and as CSV whose cells a spreadsheet cannot run and that hold each record's
bytes exactly, each stopping at its records or bytes (and saying so), each download audited.
The records are fed to the page in place of the quarantine topic's, so no cluster is needed."""

from __future__ import annotations

import base64
import csv
import io
import json

import pytest
from confluent_kafka import KafkaException
from django.urls import reverse

from console.csv_cells import safe_cell
from console.views import quarantine
from console.views.quarantine import CSV_HEADER
from infra import kafka_copy
from replication.cutover import restore, restore_quarantine
from replication.models import AuditEvent, ClusterLink, KafkaCluster, MirrorTopic

pytestmark = [pytest.mark.db, pytest.mark.django_db]


class Message:
    """What confluent-kafka's consumer gives for one record of the quarantine topic."""

    def __init__(self, partition, offset, headers, key=b"k", value=b"v", timestamp=1000):
        self._partition, self._offset, self._headers = partition, offset, headers
        self._key, self._value, self._timestamp = key, value, timestamp

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def timestamp(self):
        return (1, self._timestamp)

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        if isinstance(self._headers, Exception):
            raise self._headers
        return self._headers


def restored(offset: int, timestamp: int = 1700) -> list:
    """The headers a restore adds to each record it sets aside (`restore._origin`)."""
    return restore._origin(1)(offset, timestamp)


RECORDS = [
    # A producer's own origin headers, not UTF-8 and null, before the restore's.
    Message(
        0,
        0,
        [
            ("isthmus.origin.offset", b"\xff\xfe"),
            ("isthmus.origin.partition", None),
            ("trace", b"\x1b[2Jcleared"),
            *restored(5),
        ],
    ),
    # A record written into the quarantine topic by hand: no origin the restore gave, a null
    # one and one in no encoding.
    Message(0, 1, [("isthmus.origin.offset", None), ("isthmus.origin.timestamp", b"\x80")]),
    Message(0, 2, [("isthmus.origin.offset", b"9" * 5000)]),
    Message(0, 3, UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")),
]


@pytest.fixture
def quarantined(monkeypatch) -> MirrorTopic:
    cluster = KafkaCluster.objects.create(name="dc2", bootstrap_servers="127.0.0.1:1")
    link = ClusterLink.objects.create(name="from-dc1", destination=cluster, source_cluster_id="x")
    mirror = MirrorTopic.objects.create(
        link=link,
        destination=cluster,
        source_topic="orders",
        mirror_topic="orders",
        num_partitions=2,
        state=MirrorTopic.State.ACTIVE,
        stop_report={"kind": restore.KIND, "actor": "admin", "quarantine": "orders.quarantine-1"},
    )
    monkeypatch.setattr(kafka_copy.Records, "read_head", lambda *args, **kwargs: RECORDS)
    return mirror


def test_origin_headers_a_producer_wrote_are_read_as_no_number_not_failed_on(quarantined):
    found = restore_quarantine.read_quarantine(quarantined)
    assert [(r.partition, r.offset, r.timestamp) for r in found] == [
        (1, 5, 1700),  # the restore's own, added last, count
        (0, None, 1000),  # the message's own partition and timestamp; no offset known
        (0, None, 1000),
        (0, None, 1000),
    ]
    assert found[3].headers == () and found[3].headers_unreadable


def test_the_page_shows_them_escaped_and_inert(client_as, quarantined):
    url = reverse("mirror-quarantine", args=["dc2", "orders"])
    response = client_as("viewer").get(url)
    assert response.status_code == 200
    page = response.content.decode()
    assert '<tr data-partition="1" data-offset="5">' in page
    assert "<code>isthmus.origin.offset: \\xff\\xfe</code>" in page
    assert "<code>isthmus.origin.partition: (null)</code>" in page
    assert "<code>trace: \\x1b[2Jcleared</code>" in page and "\x1b" not in page
    assert '<tr data-partition="0" data-offset=""><td>0</td><td>unknown</td>' in page
    assert "<code>isthmus.origin.timestamp: \\x80</code>" in page
    assert "(unreadable: a header&#x27;s name is not UTF-8)" in page


def test_timestamps_show_as_times_in_utc_not_epoch_milliseconds(client_as, quarantined):
    page = client_as("viewer").get(reverse("mirror-quarantine", args=["dc2", "orders"]))
    shown = page.content.decode()
    assert '<time datetime="1970-01-01T00:00:01.700000+00:00"' in shown
    assert ">1970-01-01 00:00:01.700</time>" in shown
    assert 'id="export-json"' in shown and 'id="export-csv"' in shown


def test_the_json_export_keeps_every_byte_text_as_text_the_rest_in_base64(client_as, quarantined):
    answer = client_as("viewer").get(reverse("mirror-quarantine-json", args=["dc2", "orders"]))
    assert answer["Content-Disposition"].startswith('attachment; filename="orders.quarantine-1-')
    body = _json(answer)
    assert (body["quarantine_topic"], body["complete"], len(body["records"])) == (
        "orders.quarantine-1",
        True,
        4,
    )
    assert body["stopped"] == "" and body["set_aside_by"] == "admin"
    first = body["records"][0]
    assert (first["partition"], first["offset"], first["timestamp"]) == (
        1,
        5,
        "1970-01-01T00:00:01.700Z",
    )
    assert (first["key"], first["key_encoding"]) == ("k", "utf-8")
    assert first["headers"][0] == {
        "name": "isthmus.origin.offset",
        "value": "//4=",  # b"\xff\xfe"
        "value_encoding": "base64",
    }
    assert first["headers"][1] == {
        "name": "isthmus.origin.partition",
        "value": None,
        "value_encoding": None,
    }
    assert body["records"][3]["headers"] is None  # a header name that is not UTF-8


def _json(answer) -> dict:
    return json.loads(b"".join(answer.streaming_content))


def _csv(answer) -> list[list[str]]:
    assert answer["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(b"".join(answer.streaming_content).decode())))


def _bytes(text: str, encoding: str) -> bytes:
    """What a reader of the export makes of a cell and its encoding."""
    return {"utf-8": str.encode, "base64": base64.b64decode, "hex": bytes.fromhex}[encoding](text)


def test_the_csv_export_is_inert_in_a_spreadsheet_and_byte_exact(
    client_as, quarantined, monkeypatch
):
    hostile = [
        Message(0, 0, [("x", b"=cmd|' /C calc'!A0")], key=b"=HYPERLINK(1)", value=b"@SUM"),
        # Each of these safe_cell would change: a number, a separator before a minus, a line
        # break, a bidi override; a header name too; bytes whose base64 starts with a `+`.
        Message(
            1,
            0,
            [(",=name", b"a,-1"), ("ok", b"-5"), ("n", None)],
            key=b"-5",
            value="a,-1\nb\u202e".encode(),
            timestamp=-1,
        ),
        Message(1, 1, [], key=b"\xf8\x00", value=b"plain text, kept"),
    ]
    monkeypatch.setattr(kafka_copy.Records, "read_head", lambda *args, **kwargs: hostile)
    rows = _csv(client_as("viewer").get(reverse("mirror-quarantine-csv", args=["dc2", "orders"])))
    assert rows[0] == CSV_HEADER and len(rows) == 4  # no row saying the export stopped
    assert all(safe_cell(cell) == cell for row in rows for cell in row)  # nothing was altered
    for message, row in zip(hostile, rows[1:], strict=True):
        _, _, _, _, key_encoding, key, value_encoding, value, headers = row
        assert _bytes(key, key_encoding) == message.key()
        assert _bytes(value, value_encoding) == message.value()
        assert [
            (
                _bytes(h["name"], h["name_encoding"]).decode(),
                None if h["value"] is None else _bytes(h["value"], h["value_encoding"]),
            )
            for h in json.loads(headers)
        ] == message.headers()
    assert rows[1][4:8] == ["base64", "PUhZUEVSTElOSygxKQ==", "base64", "QFNVTQ=="]
    assert rows[2][2:4] == ["", ""]  # no timestamp: both empty, not "'-1"
    assert rows[3][4:8] == ["hex", "f800", "utf-8", "plain text, kept"]


def _read_head(found: list):
    """`Records.read_head` over `found`, stopping as the real one does."""

    def read(self, topic, partitions, limit, timeout_s=30, max_bytes=None):
        kept, held = [], 0
        for msg in found[:limit]:
            if max_bytes is not None and held >= max_bytes:
                break
            kept.append(msg)
            held += kafka_copy.record_size(msg)
        return kept

    return read


def test_an_export_stops_at_its_records_or_bytes_says_so_and_is_audited(
    client_as, quarantined, monkeypatch
):
    big = [Message(0, n, [("h", b"x" * 10)], key=b"k" * 40, value=b"v" * 50) for n in range(5)]
    monkeypatch.setattr(kafka_copy.Records, "read_head", _read_head(big))  # 101 bytes each
    client = client_as("viewer")
    json_url = reverse("mirror-quarantine-json", args=["dc2", "orders"])
    csv_url = reverse("mirror-quarantine-csv", args=["dc2", "orders"])

    monkeypatch.setattr(quarantine, "EXPORTED", 3)
    body = _json(client.get(json_url))
    assert len(body["records"]) == 3 and body["complete"] is False
    assert body["stopped"].startswith("The export stopped at 3 records: the quarantine holds more.")
    assert "kafka-console-consumer --topic orders.quarantine-1" in body["stopped"]

    monkeypatch.setattr(quarantine, "EXPORTED", 10)
    monkeypatch.setattr(quarantine, "EXPORTED_BYTES", 2 * 2**20)
    body = _json(client.get(json_url))
    assert len(body["records"]) == 5 and body["complete"] is True
    monkeypatch.setattr(quarantine, "EXPORTED_BYTES", 200)  # the second record reaches it
    body = _json(client.get(json_url))
    assert len(body["records"]) == 2 and body["complete"] is False
    assert "stopped after 2 records, at 200 bytes of keys, values and headers" in body["stopped"]
    rows = _csv(client.get(csv_url))
    assert len(rows) == 4 and rows[-1][0].startswith("(export stopped) The export stopped after 2")

    exports = AuditEvent.objects.filter(action="mirror.quarantine_export").order_by("pk")
    assert [(e.actor_name, e.target, e.result) for e in exports] == [
        ("viewer", "mirror orders", "ok")
    ] * 4
    assert exports[0].message.startswith("Exported 3 records of orders.quarantine-1 as JSON.")
    assert exports[3].message.startswith("Exported 2 records of orders.quarantine-1 as CSV.")


def test_an_export_without_a_quarantine_or_a_cluster_says_so(client_as, quarantined, monkeypatch):
    client = client_as("viewer")
    url = reverse("mirror-quarantine-json", args=["dc2", "orders"])

    def down(*args, **kwargs):
        raise KafkaException("Broker transport failure")

    monkeypatch.setattr(kafka_copy.Records, "read_head", down)
    answer = client.get(url)
    assert answer.status_code == 503
    assert "Try the export again once the cluster answers" in answer.content.decode()
    MirrorTopic.objects.filter(pk=quarantined.pk).update(stop_report={})
    assert client.get(url).status_code == 404
