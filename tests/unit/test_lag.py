"""A mirror partition's lag: the source's end less where the mirror's end stands in source
offsets; what the stream read but has not written yet is lag, not progress."""

from types import SimpleNamespace
from typing import Any

from replication.observe.lag_partitions import PartitionStatus, partition_status


def _status(dest_end, source_end, **reported) -> PartitionStatus:
    return PartitionStatus(0, "ACTIVE", dest_end, source_end, **reported)


def test_lag_is_the_sources_end_less_the_mirrors():
    assert _status(40, 100).lag == 60
    assert _status(100, 100).lag == 0
    assert _status(-1, 100).lag == -1 and _status(40, -1).lag == -1  # an end did not answer


def test_records_read_but_not_yet_in_the_mirror_count_as_lag():
    # The stream read all 100,000 source records into its producer's queue; 20,000 are written.
    reading_ahead = _status(20_000, 100_000, read_upto=100_000, next_source=100_000)
    assert reading_ahead.lag == 80_000


def test_gaps_the_stream_read_past_count_once_all_it_read_is_written():
    # The source ends in a transaction marker at 10: the mirror holds all 10 records.
    assert _status(10, 11, read_upto=11, next_source=10).lag == 0
    # Through the offset run: source 500 went to mirror 0 (a mirror started at 500).
    assert _status(30, 600, run=(500, 0), read_upto=530, next_source=530).lag == 70


def test_source_records_deleted_before_the_mirror_copied_or_read_them_are_lost():
    # A paused mirror (no report) whose offsets were last known identical: 5 copied, the
    # source's log start at 15.
    assert _status(5, 20, source_log_start=15, known_identical=True).lost == (5, 15)
    assert _status(15, 20, source_log_start=15, known_identical=True).lost is None
    # Read before the deletion, in flight: not lost.
    reading = _status(5, 20, source_log_start=15, read_upto=15, next_source=15)
    assert reading.lost is None
    # Offsets translated and no report to map them by: not told.
    assert _status(5, 20, source_log_start=15).lost is None


def test_a_stream_that_has_not_fetched_since_it_started_keeps_the_last_fetch_known():
    """After a resume the stream reports -1 until its first fetch (issue 47): the last fetch
    the mirror's latest reading kept still answers, and a new fetch replaces it."""
    mirror: Any = SimpleNamespace(state="ACTIVE")
    restarted: Any = {"source_hw": -1, "run": [0, 0], "translated": False, "read_upto": -1}
    kept = partition_status(mirror, 0, 90, 100, restarted, -1, False, kept_fetch=90)
    assert kept.last_fetch_source_high_watermark == 90
    fetched = partition_status(mirror, 0, 90, 100, {**restarted, "source_hw": 100}, 5, False, 90)
    assert fetched.last_fetch_source_high_watermark == 100
    paused = partition_status(mirror, 0, 90, 100, None, -1, False, kept_fetch=90)
    assert paused.last_fetch_source_high_watermark == 90
    assert (
        partition_status(mirror, 0, 90, 100, None, -1, False).last_fetch_source_high_watermark == -1
    )
