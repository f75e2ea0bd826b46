"""The offset translation of a mirror partition: runs of contiguous offsets."""

from spark_jobs.translation import Entry, Runs


def test_without_entries_offsets_are_identical():
    runs = Runs()
    assert runs.next_source(42) == 42
    assert runs.to_destination(7) == 7
    assert not runs.translated


def test_a_mirror_started_above_zero_maps_its_first_record_to_zero():
    runs = Runs([Entry(40, 0)])
    assert runs.translated
    assert runs.next_source(10) == 50
    assert runs.to_destination(45) == 5
    assert runs.to_destination(3) == 0  # removed before the mirror began: next copied record


def test_gaps_translate_to_the_next_copied_record():
    # source 0-9 copied as is, 10 a transaction marker, 11-20 at 10-19, 21-22 aborted, 23 on
    runs = Runs([Entry(11, 10), Entry(23, 20)])
    assert [runs.to_destination(s) for s in (9, 10, 11, 20, 21, 22, 23)] == [
        9,
        10,
        10,
        19,
        20,
        20,
        20,
    ]
    assert runs.next_source(25) == 28


def test_a_later_entry_replaces_those_at_or_after_its_destination_offset():
    runs = Runs([Entry(11, 10), Entry(30, 15)])
    runs.add(Entry(12, 15))  # replayed after a crash: the source had changed meanwhile
    assert runs.entries == [Entry(11, 10), Entry(12, 15)]


def test_entries_written_ahead_of_records_that_never_arrived_are_dropped():
    runs = Runs([Entry(11, 10), Entry(30, 15), Entry(40, 18)])
    assert runs.upto(15).entries == [Entry(11, 10), Entry(30, 15)]
    assert runs.upto(15).next_source(15) == 30
    assert runs.upto(12).next_source(12) == 13
