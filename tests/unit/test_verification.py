"""The record-by-record comparison of a mirror with its source
(replication.observe.record_matching, mirror_differences.unseen)."""

from infra.kafka_copy import Record
from replication.observe.mirror_differences import unseen
from replication.observe.record_matching import Difference, Position, compare, fold


def record(offset: int, value: str, timestamp: int = 1000, **kw) -> Record:
    return Record(offset, b"k", value.encode(), kw.pop("headers", ()), timestamp, **kw)


def identity(offset: int) -> int:
    return offset


def run(source, mirror, *, source_complete=True, mirror_complete=True, final=False, start=0):
    end = Position(
        source[-1].offset + 1 if source else start, mirror[-1].offset + 1 if mirror else start
    )
    return compare(
        0,
        source,
        mirror,
        identity,
        Position(start, start),
        end,
        source_complete=source_complete,
        mirror_complete=mirror_complete,
        final=final,
    )


def test_identical_records_have_no_difference():
    source = [record(o, f"v{o}") for o in range(5)]
    done = run(source, list(source))
    assert (done.identical, done.differences, done.upto) == (5, [], Position(5, 5))


def test_a_record_written_into_the_mirror_is_one_extra_and_the_rest_moved():
    source = [record(o, f"v{o}") for o in range(6)]
    foreign = record(3, "written by a super user")
    mirror = [*source[:3], foreign, *(record(o + 1, f"v{o}") for o in range(3, 6))]
    done = run(source, mirror)
    assert done.identical == 3
    assert done.differences == [
        Difference(0, "EXTRA", None, 3),
        Difference(0, "MOVED", 3, 4, count=3),
    ]
    assert "written into the mirror past its read-only rule" in done.differences[0].words()
    assert "source offsets 3 to 5 at mirror offsets 4 to 6" in done.differences[1].words()


def test_a_record_beyond_everything_the_source_had_is_extra():
    source = [record(o, f"v{o}") for o in range(3)]
    mirror = [*source, record(3, "foreign")]
    assert run(source, mirror).differences == [Difference(0, "EXTRA", None, 3)]


def test_a_changed_value_or_timestamp_is_named():
    source = [record(o, f"v{o}") for o in range(4)]
    mirror = list(source)
    mirror[1] = record(1, "other")
    mirror[2] = record(2, "v2", timestamp=5)
    found = run(source, mirror).differences
    assert found == [
        Difference(0, "DIFFERS", 1, 1, ("value",)),
        Difference(0, "DIFFERS", 2, 2, ("timestamp",)),
    ]
    assert "differs from mirror offset 1 in value" in found[0].words()


def test_the_brokers_own_timestamps_are_not_a_difference():
    source = [record(0, "v")]
    mirror = [record(0, "v", timestamp=99, log_append_time=True)]
    assert run(source, mirror).differences == []


def test_a_source_record_missing_from_the_mirror():
    source = [record(o, f"v{o}") for o in range(4)]
    mirror = [source[0], source[1], record(2, "v3")]
    done = run(source, mirror)
    assert done.differences[0] == Difference(0, "MISSING", 2, None)


def test_a_mismatch_at_the_end_of_what_was_read_waits_for_the_next_window():
    source = [record(o, f"v{o}") for o in range(4)]
    mirror = [*source[:3], record(3, "foreign")]
    done = run(source, mirror, source_complete=False, mirror_complete=False)
    assert (done.identical, done.differences, done.upto) == (3, [], Position(3, 3))
    # the last window of a range decides with what it has
    final = run(source, mirror, source_complete=False, mirror_complete=False, final=True)
    assert final.differences == [Difference(0, "DIFFERS", 3, 3, ("value",))]


def test_records_the_mirror_read_past_the_window_start_the_next_one():
    source = [record(o, f"v{o}") for o in range(2)]
    mirror = [record(o, f"v{o}") for o in range(4)]  # SLACK read beyond
    done = run(source, mirror, source_complete=False)
    assert done.differences == [] and done.upto == Position(2, 2)


def test_fold_joins_runs_that_go_on_from_each_other():
    parts = [Difference(0, "MOVED", o, o + 1) for o in range(10, 14)]
    parts.append(Difference(1, "MOVED", 14, 15))
    assert fold(parts) == [Difference(0, "MOVED", 10, 11, count=4), parts[-1]]


def test_difference_round_trips_through_json():
    d = Difference(2, "DIFFERS", 5, 6, ("key", "headers"), 3)
    assert Difference.of_json(d.as_json()) == d


def test_records_found_again_are_not_new():
    kept = [Difference(0, "EXTRA", None, 50), Difference(0, "MOVED", 50, 51, count=10)]
    again = [Difference(0, "EXTRA", None, 50), Difference(0, "MOVED", 45, 46, count=20)]
    assert unseen(kept, again) == [
        Difference(0, "MOVED", 45, 46, count=5),
        Difference(0, "MOVED", 60, 61, count=5),
    ]
    assert unseen(kept, [Difference(1, "EXTRA", None, 50)]) == [Difference(1, "EXTRA", None, 50)]
