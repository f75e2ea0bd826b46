"""Which batches the batch path writes, where, and the translation entries before them
(spark_jobs/batch_copier.py `choose`); and which links take it (`path`)."""

from __future__ import annotations

from confluent_kafka import TopicPartition

from infra.kafka_wire import Fetched
from spark_jobs import batch_copier, translation
from spark_jobs.batch_source import BatchSource
from spark_jobs.cursors import Cursor
from tests.unit.test_record_batches import make


def cursor(next_source: int, dest_next: int) -> Cursor:
    return Cursor("m", "t", "id", 0, translation.Runs([]), next_source, dest_next)


def fetched(*batches: bytes, aborted=()) -> Fetched:
    records = memoryview(bytearray(b"".join(batches)))
    return Fetched("t", 0, 0, 0, 0, 0, list(aborted), records)


def source_at(offset: int) -> BatchSource:
    source = BatchSource({"bootstrap.servers": "127.0.0.1:1"})
    source.incremental_assign([TopicPartition("t", 0, offset)])
    return source


def test_whole_batches_are_written_as_they_lie_and_each_gap_is_translated_first():
    c, source = cursor(0, 0), source_at(0)
    found = fetched(make(0, [0, 1, 2]), make(3, [0]), make(10, [0, 1]))
    chosen, gaps = batch_copier.choose([found], {("t", 0): c}, source)
    assert [(o.offset, o.count, o.view is not None) for o in chosen] == [
        (0, 3, True),
        (3, 1, True),
        (4, 2, True),
    ]
    assert bytes(chosen[2].view) == make(10, [0, 1])
    assert gaps == [(c, translation.Entry(10, 4))]
    assert (c.next_source, c.dest_next) == (12, 6)
    assert source.positions["t", 0] == 12


def test_a_partition_starting_inside_a_batch_gets_the_rest_of_it_built_again():
    c, source = cursor(5, 0), source_at(5)
    chosen, gaps = batch_copier.choose(
        [fetched(make(0, [0, 1, 2, 3, 4, 5, 6]), make(7, [0]))], {("t", 0): c}, source
    )
    assert [r.offset for r in chosen[0].records] == [5, 6] and chosen[0].view is None
    assert chosen[1].view is not None and chosen[1].offset == 2
    assert gaps == [] and (c.next_source, c.dest_next) == (8, 3)


def test_a_batch_already_in_the_destination_is_skipped_but_read_past():
    c, source = cursor(3, 3), source_at(3)
    chosen, gaps = batch_copier.choose([fetched(make(0, [0, 1, 2]))], {("t", 0): c}, source)
    assert chosen == [] and gaps == []
    assert source.positions["t", 0] == 3


def test_a_compacted_batch_is_written_record_for_record_with_its_gaps_translated():
    c, source = cursor(0, 0), source_at(0)
    chosen, gaps = batch_copier.choose(
        [fetched(make(0, [0, 3, 4]), make(9, [0]))], {("t", 0): c}, source
    )
    assert [r.offset for r in chosen[0].records] == [0, 3, 4]
    # Offset 9 follows a batch that ended at 4 (its last record): translated too.
    assert gaps == [(c, translation.Entry(3, 1)), (c, translation.Entry(9, 3))]
    assert (c.next_source, c.dest_next) == (10, 4)


def test_markers_and_aborted_transactions_are_skipped_and_leave_a_translated_gap():
    c, source = cursor(0, 0), source_at(0)
    found = fetched(
        make(0, [0, 1], pid=5, transactional=True),
        make(2, [0], pid=5, marker=0),
        make(3, [0, 1], pid=5, transactional=True),
        make(5, [0], pid=5, marker=1),
        aborted=[(5, 0)],
    )
    chosen, gaps = batch_copier.choose([found], {("t", 0): c}, source)
    assert [(o.offset, o.count) for o in chosen] == [(0, 2)]
    assert gaps == [(c, translation.Entry(3, 0))]
    assert source.positions["t", 0] == 6 and c.next_source == 5


def test_a_partition_taken_off_the_copier_meanwhile_is_left_alone():
    source = source_at(0)
    chosen, gaps = batch_copier.choose([fetched(make(0, [0]))], {}, source)
    assert chosen == gaps == [] and source.positions["t", 0] == 0


def spec(**extra) -> dict:
    return {
        "link_id": "l",
        "link_name": "l",
        "source": {"bootstrap.servers": "s:1"},
        "destination": {"bootstrap.servers": "d:1"},
        **extra,
    }


def test_links_take_the_batch_path_unless_they_ask_otherwise_or_it_cannot_serve_them():
    assert batch_copier.path(spec()) == ("batch", "")
    assert batch_copier.path(spec(path="record")) == ("record", "")
    schemas = batch_copier.path(spec(schemas={"subjects": []}))
    assert schemas[0] == "record" and "schema" in schemas[1]
    oauth = spec()
    oauth["source"] = {
        "bootstrap.servers": "s:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
    }
    assert batch_copier.path(oauth) == (
        "record",
        "the batch path does not speak the source's SASL mechanism OAUTHBEARER",
    )
    tls = spec()
    tls["destination"] = {"bootstrap.servers": "d:1", "security.protocol": "SSL"}
    assert (
        batch_copier.path(tls)[0] == "record" and "destination's TLS" in batch_copier.path(tls)[1]
    )
    scram = spec()
    scram["source"] = {
        "bootstrap.servers": "s:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
    }
    assert batch_copier.path(scram) == ("batch", "")
    assert batch_copier.copier_for(spec()) is batch_copier.BatchCopier


def test_a_paused_partition_is_not_fetched_and_a_seek_moves_where_it_is_fetched_from():
    source = source_at(5)
    source.leaders, source.stale = {("t", 0): 1}, False
    asked = []
    source._connection = lambda node: type(  # a connection that notes what it is sent
        "C", (), {"send": lambda self, request, *_: asked.append(request)}
    )()
    source.pause([TopicPartition("t", 0)])
    source.fetch_ahead()
    assert asked == [] and source.asked == {}
    source.seek(TopicPartition("t", 0, 2))
    source.resume([TopicPartition("t", 0)])
    source.fetch_ahead()
    assert source.asked == {1: {("t", 0): 2}}
