"""A mirror partition's lag in time: the age of the oldest source record it does not hold yet,
from that record's timestamp; 0 caught up; unknown when it cannot be told. What a page knows
without reading records (lag_times.fill without `read`), and how the words read."""

from dataclasses import dataclass, field

import pytest

from replication.core.errors import ReplicationError
from replication.models import ClusterLink
from replication.observe import lag_times, rpo
from replication.observe.lag import PartitionReading, Reading
from replication.observe.lag_partitions import PartitionStatus
from replication.observe.lag_times import FUTURE_SKEW_MS, NONE_LEFT, UNKNOWN, age_ms, lag_ms

NOW = 1_800_000_000_000  # ms


def test_the_age_is_now_less_the_timestamp():
    assert age_ms(NOW - 42_000, NOW) == 42_000
    assert lag_ms(7, NOW - 42_000, NOW) == 42_000


def test_caught_up_is_zero_whatever_the_timestamp_and_an_unknown_record_lag_is_unknown():
    assert lag_ms(0, UNKNOWN, NOW) == 0
    assert lag_ms(-1, NOW - 5, NOW) == UNKNOWN


def test_a_missing_timestamp_is_unknown_and_no_record_left_is_nothing_behind():
    assert lag_ms(3, -1, NOW) == UNKNOWN  # an old message format has none
    # Only transaction markers or compacted records follow the mirror's end: nothing to copy.
    assert lag_ms(1, NONE_LEFT, NOW) == 0


def test_a_timestamp_a_little_ahead_is_clock_skew_and_one_far_ahead_says_nothing():
    assert lag_ms(1, NOW + 500, NOW) == 0
    assert lag_ms(1, NOW + FUTURE_SKEW_MS, NOW) == 0
    assert lag_ms(1, NOW + FUTURE_SKEW_MS + 1, NOW) == UNKNOWN
    # The same record, later: once the clock has passed it, it has an age.
    assert lag_ms(1, NOW + 90_000, NOW + 100_000) == 10_000


def test_the_oldest_missing_record_is_where_the_lag_begins():
    assert PartitionStatus(0, "ACTIVE", 40, 100).first_missing == 40
    assert PartitionStatus(0, "ACTIVE", 100, 100).first_missing == -1
    # Translated: source 500 went to mirror 0, the mirror holds 30 records.
    translated = PartitionStatus(0, "ACTIVE", 30, 600, run=(500, 0), read_upto=530, next_source=530)
    assert translated.first_missing == 530


@dataclass(frozen=True)
class _Mirror:
    link_id: int = 1
    mirror_topic: str = "orders"
    source_topic: str = "orders"


@dataclass(frozen=True)
class _Status:
    mirror: _Mirror
    partitions: list[PartitionStatus] = field(default_factory=list)
    at: float = NOW / 1000


def _page(status: PartitionStatus, before: PartitionReading | None) -> PartitionStatus:
    """What a page's reading (no records read) says of one partition."""
    kept = {1: {"orders": Reading(0, {0: before})}} if before else {}
    [found] = lag_times.fill([_Status(_Mirror(), [status])], kept, read=False)
    return found.partitions[0]


def test_a_page_keeps_the_timestamp_while_the_oldest_missing_record_is_the_same():
    # A paused mirror: its oldest missing record (offset 40) read 30 s before, at NOW - 60 s.
    before = PartitionReading(60, 100, 40, False, 30_000, 40, NOW - 60_000)
    now = _page(PartitionStatus(0, "PAUSED", 40, 120), before)
    assert (now.oldest_timestamp, now.lag_ms) == (NOW - 60_000, 60_000)  # it grows with time


def test_a_page_shows_the_age_last_measured_once_the_mirror_moved_on():
    before = PartitionReading(60, 100, 40, False, 2_000, 40, NOW - 5_000)
    moved = _page(PartitionStatus(0, "ACTIVE", 90, 120), before)
    assert (moved.oldest_timestamp, moved.lag_ms) == (UNKNOWN, 2_000)  # read at the next sample
    assert _page(PartitionStatus(0, "ACTIVE", 120, 120), before).lag_ms == 0
    assert _page(PartitionStatus(0, "ACTIVE", 90, 120), None).lag_ms == UNKNOWN


def test_a_reading_kept_before_lag_in_time_existed_still_reads():
    old = Reading(0, {0: PartitionReading(*[5, 10, 5, False])})
    assert old.partitions[0].lag_ms == UNKNOWN and old.max_lag_ms == UNKNOWN
    both = Reading(
        0, {0: PartitionReading(5, 10, 5, False, 3_000), 1: PartitionReading(0, 4, 4, False, 0)}
    )
    assert both.max_lag_ms == 3_000


@pytest.mark.parametrize(
    ("ms", "words"),
    [
        (-1, "unknown"),
        (0, "0 s"),
        (1_500, "1.5 s"),
        (42_000, "42 s"),
        (250_000, "4 min 10 s"),
        (3 * 3600_000 + 12 * 60_000, "3 h 12 min"),
    ],
)
def test_a_lag_in_time_in_words(ms, words):
    assert rpo.seconds(ms) == words


def test_a_target_is_a_whole_number_of_seconds_or_none():
    assert rpo.parse_target("60") == 60 and rpo.parse_target(3600) == 3600
    assert rpo.parse_target("") is None and rpo.parse_target(None) is None
    for wrong in ("0", "-5", "1.5", "soon", "²", "9" * 5000, True, 400_000_000, [60]):
        with pytest.raises(ReplicationError, match="whole number of seconds"):
            rpo.parse_target(wrong)


def test_a_mirror_breaches_the_target_when_further_behind_in_time_than_it():
    lags = {"orders": 61_000, "payments": 60_000, "refunds": UNKNOWN}
    assert rpo.over_target(ClusterLink(name="ab", rpo_target_seconds=60), lags) == {
        "orders": 61_000
    }
    assert rpo.over_target(ClusterLink(name="ab"), lags) == {}  # no target, no breach
    one = rpo.describe(ClusterLink(name="ab", rpo_target_seconds=60), {"orders": 61_000})
    assert (
        one
        == "Link ab: mirror orders is 61 s behind its source, over the link's RPO target of 60 s."
    )
    two = rpo.describe(ClusterLink(name="ab", rpo_target_seconds=60), {"a": 61_000, "b": 400_000})
    assert two.startswith("Link ab: mirrors a (61 s), b (6 min 40 s) are behind their sources,")
