"""How a slot's copiers share its consumers of a source (`spark_jobs.source_readers`): which
consumer reads each partition, and when one closes. No broker: assigning partitions and
choosing readers is the client's own bookkeeping (the copies themselves are proved on brokers
by the engine's integration tests)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition

from spark_jobs import source_readers

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "log_level": 0}  # nobody there: quiet
OTHER = {**NOWHERE, "sasl.username": "someone-else"}


@pytest.fixture
def readers():
    made = source_readers.Readers("test")
    yield made
    made.close()


def _readers_of(view: source_readers.View) -> set[source_readers.Reader]:
    return set(view.where.values())


def test_links_reading_one_source_alike_share_one_consumer(readers):
    a, b = readers.view(NOWHERE), readers.view(NOWHERE)
    a.incremental_assign([TopicPartition("orders", 0, 5), TopicPartition("orders", 1, 0)])
    b.incremental_assign([TopicPartition("payments", 0, 0)])

    assert readers.count() == 1
    assert _readers_of(a) == _readers_of(b)
    (reader,) = _readers_of(a)
    assert reader.owners == {("orders", 0): a, ("orders", 1): a, ("payments", 0): b}


def test_a_partition_two_links_copy_is_read_by_a_second_consumer(readers):
    a, b = readers.view(NOWHERE), readers.view(NOWHERE)
    a.incremental_assign([TopicPartition("orders", 0, 5)])
    b.incremental_assign([TopicPartition("orders", 0, 7), TopicPartition("orders", 1, 0)])

    assert readers.count() == 2
    (first,) = _readers_of(a)
    assert b.where[("orders", 0)] is not first  # one position per partition and consumer
    assert b.where[("orders", 1)] is first  # the rest still shared

    # Once b lets it go, the second consumer holds nothing more and closes.
    b.incremental_unassign([TopicPartition("orders", 0)])
    assert readers.count() == 1


def test_a_source_reached_with_other_credentials_gets_a_consumer_of_its_own(readers):
    a, b = readers.view(NOWHERE), readers.view(OTHER)
    a.incremental_assign([TopicPartition("orders", 0, 0)])
    b.incremental_assign([TopicPartition("orders", 1, 0)])

    assert readers.count() == 2
    assert _readers_of(a).isdisjoint(_readers_of(b))


def test_the_consumer_closes_with_the_last_link_that_reads_through_it(readers):
    a, b = readers.view(NOWHERE), readers.view(NOWHERE)
    a.incremental_assign([TopicPartition("orders", 0, 0)])
    b.incremental_assign([TopicPartition("orders", 1, 0)])
    (reader,) = _readers_of(a)

    a.close()
    assert readers.count() == 1 and not reader.closed
    assert reader.owners == {("orders", 1): b}
    b.close()
    assert readers.count() == 0 and reader.closed


def test_a_change_to_a_partition_drops_what_was_read_of_it_and_not_taken(readers):
    view = readers.view(NOWHERE)
    view.incremental_assign([TopicPartition("orders", 0, 0), TopicPartition("orders", 1, 0)])
    view.put([_Record("orders", 0, 3), _Record("orders", 1, 8), _Record("orders", 0, 4)])

    view.seek(TopicPartition("orders", 0, 1))

    assert [(m.partition(), m.offset()) for m in view.take(10, 0)] == [(1, 8)]


def test_a_wait_for_records_ends_when_the_copier_is_woken(readers):
    view = readers.view(NOWHERE)
    view.wake()
    began = time.monotonic()
    assert view.take(10, 30) == []
    assert time.monotonic() - began < 1, "the wait ran its course instead of ending at once"


class _Record:
    """What a reader hands over: a record of a partition."""

    def __init__(self, topic: str, partition: int, offset: int):
        self._where = (topic, partition, offset)

    def topic(self) -> str:
        return self._where[0]

    def partition(self) -> int:
        return self._where[1]

    def offset(self) -> int:
        return self._where[2]

    def error(self) -> None:
        return None


def test_a_copier_alone_on_its_consumer_reads_it_itself_and_beside_another_is_handed_records(
    readers,
):
    a, b = readers.view(NOWHERE), readers.view(NOWHERE)
    a.incremental_assign([TopicPartition("orders", 0, 0)])
    (reader,) = _readers_of(a)
    assert a.reads_alone(reader)
    began = time.monotonic()
    assert a.take(10, 30) == []  # its own read of the consumer, as long as the reader's wait
    assert time.monotonic() - began < 1

    b.incremental_assign([TopicPartition("orders", 1, 0)])
    assert not a.reads_alone(reader) and not b.reads_alone(reader)  # the reader's thread reads
    a.put([_Record("orders", 0, 3)])
    assert [(m.partition(), m.offset()) for m in a.take(10, 0)] == [(0, 3)]

    b.close()
    assert a.reads_alone(reader)
