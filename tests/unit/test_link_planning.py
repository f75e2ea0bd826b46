"""The link application's planning, as pure functions (spark_jobs/planning.py)."""

from __future__ import annotations

from spark_jobs import planning


def _entry(ident):
    return {"mirror": ident[0], "partition": ident[2]}


def test_the_wanted_partitions_are_those_of_mirrors_whose_topic_id_is_known():
    wanted = planning.wanted_partitions(
        ["a", "b", "c"], {"a": "id-a", "b": "id-b"}, {"a": 2, "b": 1, "c": 3}
    )
    assert wanted == {("a", "id-a", 0), ("a", "id-a", 1), ("b", "id-b", 0)}


def test_a_held_partition_stays_on_its_slot_and_new_ones_go_to_the_emptiest():
    a0, a1, b0 = ("a", "id", 0), ("a", "id", 1), ("b", "id", 0)
    assigned = [{a0: _entry(a0), a1: _entry(a1)}, {}]
    wanted = {a0, a1, b0}
    added = planning.not_held(assigned, wanted)
    assert added == [b0]
    slots, home = planning.assign(assigned, {a0: 0, a1: 0}, wanted, {b0: _entry(b0)})
    assert [sorted(s) for s in slots] == [[a0, a1], [b0]]
    assert home == {a0: 0, a1: 0, b0: 1}
    assert [sorted(s) for s in assigned] == [[a0, a1], []]  # the input is left as it was


def test_an_unwanted_partition_goes_and_one_back_in_the_epoch_returns_to_its_slot():
    a0, a1 = ("a", "id", 0), ("a", "id", 1)
    slots, home = planning.assign([{a0: _entry(a0)}, {a1: _entry(a1)}], {a0: 0, a1: 1}, {a0}, {})
    assert slots == [{a0: _entry(a0)}, {}]
    slots, home = planning.assign(slots, home, {a0, a1}, {a1: _entry(a1)})
    assert slots == [{a0: _entry(a0)}, {a1: _entry(a1)}]  # slot 1 had it: no two writers


def test_a_generation_is_acknowledged_once_every_reporting_task_applied_its_plan():
    pending = [(1, 1), (2, 2), (2, 3)]
    reports = [{"version": 2}, None, {"version": 3}]
    assert planning.acknowledged(pending, reports, version=3, acked=0) == (2, [(2, 3)])
    # No task reports (none started yet, or all stopped): every plan so far is taken up.
    assert planning.acknowledged(pending, [None], version=3, acked=0) == (2, [])
    # Never backwards.
    assert planning.acknowledged([(1, 4)], [{"version": 4}], version=4, acked=2) == (2, [])


def test_a_mirror_grows_to_its_sources_partitions_only_when_the_source_has_more():
    mirrors = {"m1": "s1", "m2": "s2", "m3": "s3"}
    counts = {"s1": 4, "s2": 2}  # s3 unknown: the source did not answer
    assert planning.grown(mirrors, counts, {"m1": 2, "m2": 2, "m3": 1}) == {"m1": 4}


def test_the_rate_is_per_second_over_the_window_and_zero_for_one_sample():
    assert planning.rate([(10.0, 100, 1000)], 1) == 0
    assert planning.rate([(10.0, 100, 1000), (12.0, 300, 1400)], 1) == 100.0
    assert planning.rate([(10.0, 100, 1000), (12.0, 300, 1400)], 2) == 200.0


def test_progress_is_per_mirror_partition_with_the_sources_high_watermark():
    reports = [
        {
            "slot": 0,
            "last_write_ms": 5,
            "error": "",
            "partitions": {
                "0/m1": {"run": [0, 0], "translated": True, "read_upto": 10, "next_source": 9}
            },
        },
        None,
        {
            "slot": 2,
            "last_write_ms": 9,
            "error": "broker gone",
            "partitions": {
                "1/m1": {"run": [0, 0], "translated": False, "read_upto": 7, "next_source": 7}
            },
        },
    ]
    progress, behind, last_write, errors = planning.mirror_progress(
        reports, {("s1", 0): 10, ("s1", 1): 8}, {"m1": "s1"}
    )
    assert progress["m1"]["0"] == {
        "run": [0, 0],
        "translated": True,
        "source_hw": 10,
        "read_upto": 10,
        "next_source": 9,
    }
    assert progress["m1"]["1"]["source_hw"] == 8
    assert behind is True  # partition 1 was read up to 7 of 8
    assert last_write == 9
    assert errors == ["slot 2: broker gone"]


def test_progress_is_made_again_only_when_a_report_the_ends_or_the_mirrors_are_replaced():
    def report(read_upto: int) -> dict:
        partition = {"run": [0, 0], "translated": True, "read_upto": read_upto, "next_source": 0}
        return {"slot": 0, "last_write_ms": 1, "error": "", "partitions": {"0/m": partition}}

    progress_of = planning.ProgressOf()
    reports, ends, mirrors = [report(5), None], {("s", 0): 9}, {"m": "s"}
    first = progress_of(reports, ends, mirrors)
    assert first[1] is True  # read up to 5 of 9
    assert progress_of(list(reports), ends, mirrors) is first  # the same objects again
    assert progress_of([report(9), None], ends, mirrors)[1] is False
    assert progress_of([report(9), None], {("s", 0): 12}, mirrors)[0]["m"]["0"]["source_hw"] == 12
    assert progress_of(reports, ends, {"m": "other"})[0]["m"]["0"]["source_hw"] == -1


def test_a_new_partition_goes_to_the_slot_holding_fewest_of_every_links_partitions():
    a0, a1 = ("a", "id", 0), ("a", "id", 1)
    # Slot 0 holds three partitions of other links, slot 1 one: both new ones go to slot 1
    # until it holds as many.
    slots, home = planning.assign([{}, {}], {}, {a0, a1}, {a0: _entry(a0), a1: _entry(a1)}, [3, 1])
    assert home == {a0: 1, a1: 1}
    assert [sorted(s) for s in slots] == [[], [a0, a1]]


def test_only_records_written_since_the_last_count_are_added_and_a_new_run_counts_from_zero():
    two_slots = [
        {"slot": 0, "run": "a", "records": 10, "bytes": 100},
        {"slot": 1, "run": "b", "records": 5, "bytes": 50},
        None,
    ]
    counted, records, size = planning.written_since({}, two_slots)
    assert (records, size) == (15, 150)

    # The same reports again: nothing new, whichever slot reported last (an idle link).
    counted, records, size = planning.written_since(counted, two_slots)
    assert (records, size) == (0, 0)

    restarted = [two_slots[0], {"slot": 1, "run": "c", "records": 2, "bytes": 20}]
    counted, records, size = planning.written_since(counted, restarted)
    assert (records, size) == (2, 20)
    assert counted[1, "c"] == (2, 20)
