"""The pure rules of merge flows: provenance headers, the loop rule's reading of them, where a
flow's progress lives, how flows sit among a link's partitions, and the partition mapping."""

from __future__ import annotations

import pytest

from replication.core.errors import ReplicationError
from replication.topics.merge_flows import _mapping
from spark_jobs import flow_copy, merging, planning


def test_the_origin_is_read_from_the_provenance_header_and_nothing_else():
    header = merging.provenance("dc1-id", "topic1", 2, 41, 1_700_000_000_000)
    assert header == b"dc1-id,topic1,2,41,1700000000000"
    assert merging.origin_of([("a", b"x"), (merging.ORIGIN, header)]) == "dc1-id"
    assert merging.origin_of([("a", b"dc1-id,topic1")]) is None
    assert merging.origin_of([(merging.ORIGIN, None)]) is None
    assert merging.origin_of(None) is None


def test_a_flows_progress_always_goes_to_the_same_partition():
    flow = "0f4c2c3e-5a3a-4d37-a1a1-9b0a7d1f6a10"
    assert merging.progress_partition(flow) == merging.progress_partition(flow)
    assert 0 <= merging.progress_partition(flow) < merging.PROGRESS_PARTITIONS
    assert merging.progress_key(flow, 3) == f"{flow}/3".encode()


def test_a_flow_is_copied_in_parts_among_the_links_partitions_and_reported_whole():
    idents = planning.flow_idents({"id": "f1", "name": "dc1.topic1", "parts": 2})
    assert idents == [("flow:dc1.topic1", "f1", 0), ("flow:dc1.topic1", "f1", 1)]
    assert planning.is_flow(idents[0]) and not planning.is_flow(("orders", "id", 0))
    part = {"id": "f1", "parts": 2, "part": 1}
    assert [p for p in range(5) if merging.part_of(p, part)] == [1, 3]
    assert merging.transactional_id("f1", 1, 2) == "_isthmus-flow-f1-1"
    assert merging.transactional_id("f1") == "_isthmus-flow-f1"  # one part: as before parts
    one = {"records": 3, "skipped": 1, "bytes": 30, "records_per_sec": 1.5, "error": ""}
    reports = [
        None,
        {"flows": {"f1/0": {**one, "latency_ms": 5, "partitions": {"0": {"next": 2}}}}},
        {"flows": {"f1/1": {**one, "latency_ms": 9, "partitions": {"1": {"next": 4}}}}},
        {"flows": {"f2/0": {"records": 7}}},
    ]
    found = planning.flow_progress(reports)
    assert found["f2"] == {"records": 7}
    assert (found["f1"]["records"], found["f1"]["skipped"], found["f1"]["latency_ms"]) == (6, 2, 9)
    assert found["f1"]["records_per_sec"] == 3.0
    assert found["f1"]["partitions"] == {"0": {"next": 2}, "1": {"next": 4}}


@pytest.mark.parametrize(
    ("asked", "source", "existing", "chosen"),
    [
        (None, 4, None, "one-to-one"),  # made with the source's partitions
        (None, 4, 4, "one-to-one"),
        (None, 4, 6, "by-key"),
        ("by-key", 4, 4, "by-key"),
        ("one-to-one", 4, None, "one-to-one"),
    ],
)
def test_partitions_map_one_to_one_only_between_equal_counts(asked, source, existing, chosen):
    assert _mapping(asked, source, existing, "t") == chosen


def test_one_to_one_between_unequal_counts_is_refused_saying_what_to_do():
    with pytest.raises(ReplicationError) as refused:
        _mapping("one-to-one", 4, 6, "topic2.replica")
    assert "the source topic has 4 and 'topic2.replica' 6. Use by-key" in str(refused.value)


class _Record:
    """What the flow reads of a consumed record."""

    def __init__(self, partition: int, offset: int, headers: list | None = None):
        self.at = (partition, offset, headers)

    def partition(self) -> int:
        return self.at[0]

    def offset(self) -> int:
        return self.at[1]

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_000 + self.at[1])

    def headers(self) -> list | None:
        return self.at[2]

    def value(self) -> bytes:
        return b"v%d" % self.at[1]

    def key(self) -> None:
        return None


class _Producer:
    def __init__(self):
        self.sent: list[tuple[int, bytes, bool, list]] = []

    def produce(self, topic, value, key, partition, on_delivery=None, timestamp=0, headers=None):
        self.sent.append((partition, value, on_delivery is not None, headers))


def test_a_batch_keeps_order_per_partition_and_only_each_partitions_ends_report_delivery():
    flow = {
        "id": "f1",
        "name": "topic1",
        "source": "topic1",
        "destination": "topic1",
        "mapping": "one-to-one",
        "source_cluster_id": "dc1",
        "destination_cluster_id": "dc2",
    }
    copy = flow_copy.FlowCopy({"source": {}, "destination": {}}, flow, slot=None)
    back = [(merging.ORIGIN, b"dc2,topic1,0,9,1")]  # written on dc2 first: never copied back
    batch = [_Record(0, 5), _Record(1, 7), _Record(0, 6), _Record(0, 7, back), _Record(0, 8)]
    batch += [_Record(2, 3), _Record(0, 9, [("h", b"x")])]
    producer = _Producer()
    nexts, counts, skipped, _, newest = copy.send_records(producer, batch, delivered=print)
    assert (nexts, counts, skipped, newest) == ({0: 10, 1: 8, 2: 4}, {0: 4, 1: 1, 2: 1}, 1, 1_009)
    by_partition = {
        p: [(v, reports) for q, v, reports, _ in producer.sent if q == p] for p in (0, 1, 2)
    }
    assert by_partition[0] == [(b"v5", True), (b"v6", False), (b"v8", False), (b"v9", True)]
    assert by_partition[1] == [(b"v7", True)] and by_partition[2] == [(b"v3", True)]
    headers = {value: h for _, value, _, h in producer.sent}
    assert headers[b"v5"] == [(merging.ORIGIN, b"dc1,topic1,0,5,1005")]
    assert headers[b"v9"] == [("h", b"x"), (merging.ORIGIN, b"dc1,topic1,0,9,1009")]
