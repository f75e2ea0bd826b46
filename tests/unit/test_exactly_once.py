"""The mirror copier's exactly-once rules (`spark_jobs.mirror_writer`, docs/mirror-engine.md),
with in-memory clients (tests/unit/fake_copier_clients.py) instead of Kafka: a translation entry
is stored before its record is written, the first write of a partition lands where the copier
expects or it stops, and a copier whose slot is fenced writes nothing more. The engine's
integration tests prove the same on real clusters."""

from __future__ import annotations

import threading
import time

import pytest

from spark_jobs import copier, translation
from tests.unit.fake_copier_clients import (
    Destination,
    Slot,
    Source,
    copier_over,
    partition,
)

TOPIC = "orders"


@pytest.fixture
def source() -> Source:
    return Source()


@pytest.fixture
def destination() -> Destination:
    return Destination()


@pytest.fixture
def slot() -> Slot:
    return Slot()


def _started(source: Source, destination: Destination, slot: Slot, **kwargs) -> copier.Copier:
    made = copier_over(source, destination, slot, **kwargs)
    made.start([partition(TOPIC)])
    return made


def test_a_gap_in_the_source_stores_its_translation_entry_before_its_record_is_written(
    source, destination, slot
):
    source.write(TOPIC, 0, [0, 1, 2, 5, 6])  # 3 and 4 gone (compacted, say)
    task = _started(source, destination, slot)

    task.copy()

    assert destination.mirrored(TOPIC, 0) == [b"v0", b"v1", b"v2", b"v5", b"v6"]
    entry = translation.encode(translation.Entry(5, 3))
    assert destination.mirrored(translation.TOPIC, 0) == [entry]
    stored = destination.events.index(("delivered", translation.TOPIC, 0, entry))
    handed = destination.events.index(("produced", TOPIC, 0, b"v5"))
    assert stored < handed, "the record was handed to the producer before its entry was stored"
    assert task.cursors[TOPIC, 0].runs.entries == [translation.Entry(5, 3)]
    task.close()


def test_a_record_whose_translation_entry_cannot_be_stored_is_not_written(
    source, destination, slot
):
    source.write(TOPIC, 0, [4, 5])  # the log starts above 0: an entry before the first record
    destination.refused.add(translation.TOPIC)
    task = _started(source, destination, slot)

    with pytest.raises(translation.StoreFailed):
        task.copy()

    assert destination.produced(TOPIC) == [], "a record went out without its entry"
    assert task.cursors[TOPIC, 0].runs.entries == []
    task.close()


def test_the_first_write_after_a_start_lands_where_the_destination_ended(source, destination, slot):
    source.write(TOPIC, 0, [0, 1, 2, 3, 4])
    for value in (b"v0", b"v1", b"v2"):  # copied before a restart
        destination.append(TOPIC, 0, value)
    task = _started(source, destination, slot)
    cursor = task.cursors[TOPIC, 0]
    assert (cursor.next_source, cursor.dest_next) == (3, 3)

    task.copy()

    assert destination.mirrored(TOPIC, 0) == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert not cursor.verify, "the first write was not checked"
    task.close()


def test_a_copier_whose_first_write_lands_elsewhere_stops_and_writes_no_more(
    source, destination, slot
):
    source.write(TOPIC, 0, [0, 1, 2])
    task = _started(source, destination, slot)
    destination.append(TOPIC, 0, b"stray")  # another writer, after the copier read the end

    with pytest.raises(copier.Fenced, match="something else writes this mirror partition"):
        task.copy()

    task.reset("fenced")  # what its loop does with Fenced
    source.write(TOPIC, 0, [3, 4])
    task.copy()  # its partitions start again only from a new assignment
    assert destination.produced(TOPIC) == [b"v0", b"v1", b"v2"]
    task.close()


@pytest.mark.parametrize("fence", ["epoch superseded", "control channel silent"])
def test_a_fenced_slot_writes_nothing_of_what_its_copier_read(source, destination, slot, fence):
    source.write(TOPIC, 0, [0, 1, 2])
    task = _started(source, destination, slot)
    if fence == "epoch superseded":
        slot.ended = True
    else:
        slot.contact = False

    task.copy()

    assert destination.produced(TOPIC) == []
    task.close()


def test_a_copier_waiting_for_room_in_its_producer_stops_once_its_epoch_is_superseded(
    source, destination, slot
):
    source.write(TOPIC, 0, list(range(10)))
    destination.stalled = True  # nothing delivered: the producer's queue stays full
    task = _started(source, destination, slot, room=3)
    outcome: list[BaseException] = []

    def copy() -> None:
        try:
            task.copy()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    time.sleep(0.2)  # it waits for room
    assert thread.is_alive() and not outcome
    slot.ended = True
    thread.join(2)

    assert not thread.is_alive(), "the copier went on waiting to write after its epoch ended"
    assert len(outcome) == 1 and isinstance(outcome[0], copier.Fenced)
    assert destination.produced(TOPIC) == [b"v0", b"v1", b"v2"]  # what the queue held, no more
    destination.stalled = False
    task.close()


def test_a_copier_whose_epoch_ends_delivers_what_it_queued_and_then_writes_nothing(
    source, destination, slot
):
    source.write(TOPIC, 0, [0, 1, 2])
    task = copier_over(source, destination, slot)
    task.assign(
        {
            "epoch": "e1",
            "version": 1,
            "digest": "d",
            "incarnation": 0,
            "partitions": [partition(TOPIC)],
        }
    )
    thread = threading.Thread(target=task.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while destination.end(TOPIC, 0) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert destination.mirrored(TOPIC, 0) == [b"v0", b"v1", b"v2"]

    slot.ended = True  # a new epoch of the slot was claimed
    task.wake()
    thread.join(5)
    source.write(TOPIC, 0, [3, 4])
    time.sleep(0.3)

    assert not thread.is_alive() and task.done
    assert destination.produced(TOPIC) == [b"v0", b"v1", b"v2"]
    assert slot.written[-1] == (["link-1|id-orders|0"], True), "its end was not noted clean"
