"""The quarantine page of a restored mirror reads records whose headers a producer wrote as it
pleased (a restore copies them as they were, then adds its own `isthmus.origin.*`): a header
that is not UTF-8, null, or not a number shows escaped, "(null)" or as no origin, and the page
answers (it was a 500). The records are fed to the page in place of the quarantine topic's, so
no cluster is needed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from infra import kafka_copy
from replication.cutover import restore, restore_quarantine
from replication.models import ClusterLink, KafkaCluster, MirrorTopic

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
