"""The arithmetic of tests/copy_gaps.py: worst lag, longest gap, and recovery after a moment."""

from __future__ import annotations

from tests.copy_gaps import Batch, MirrorTail, Timeline

KILL = 1_000.0


def steady(start: float, end: float, lag: float = 0.1, every: float = 0.2) -> list[Batch]:
    """Batches every `every` s from `start` to `end`, each `lag` s behind its timestamps."""
    batches, t = [], start
    while t < end:
        batches.append(Batch(t, t - lag - every, t - lag, 10))
        t = round(t + every, 6)
    return batches


def killed_and_caught_up() -> Timeline:
    """Copying until the kill, nothing for 12 s, then the backlog in batches of 2 s of records
    each 0.5 s (4 s of records a second: the last late batch at +15.5 s), then steady again."""
    batches = steady(KILL - 30, KILL)
    t, copied = KILL + 12, KILL - 0.1
    while copied < t - 0.5:
        batches.append(Batch(t, copied, copied + 2, 100))
        copied, t = copied + 2, t + 0.5
    return Timeline(batches + steady(t + 0.2, KILL + 60))


def test_steady_copying_is_never_late():
    timeline = Timeline(steady(KILL - 10, KILL + 10))
    assert timeline.recovered_after(KILL) == 0
    assert round(timeline.worst_lag(), 6) == 0.3
    assert round(timeline.longest_gap(KILL)[0], 6) == 0.2


def test_a_kill_measured_from_its_moment():
    timeline = killed_and_caught_up()
    gap, began = timeline.longest_gap(KILL)
    assert (round(gap, 6), began) == (12.0, KILL)  # from the kill to the first record again
    assert round(timeline.resumed_after(KILL), 6) == 12.0
    # The backlog's last late batch: its oldest record more than 1 s behind.
    late = [b for b in timeline.batches if b.visible - b.oldest > 1]
    assert timeline.recovered_after(KILL) == late[-1].visible - KILL
    assert timeline.recovered_after(KILL) == 15.5
    # The first record after the kill waited the whole stall and a little.
    assert round(timeline.worst_lag(since=KILL), 6) == 12.1


def test_a_looser_bound_is_met_sooner():
    timeline = killed_and_caught_up()
    assert timeline.recovered_after(KILL, within=5) < timeline.recovered_after(KILL, within=1)


def test_lateness_before_the_moment_is_not_counted():
    early_trouble = [Batch(KILL - 20, KILL - 40, KILL - 20, 5)]  # 20 s late, before the kill
    timeline = Timeline(early_trouble + steady(KILL - 19, KILL + 10))
    assert timeline.recovered_after(KILL) == 0
    assert timeline.worst_lag() == 20
    assert timeline.worst_lag(since=KILL) < 1


def test_a_late_blip_after_recovery_counts():
    """Back under a second means for the rest of the run: a record late later moves it."""
    blip = Batch(KILL + 40, KILL + 37, KILL + 40, 5)
    timeline = Timeline(sorted(killed_and_caught_up().batches + [blip], key=lambda b: b.visible))
    assert timeline.recovered_after(KILL) == 40


def test_nothing_seen():
    timeline = Timeline()
    assert timeline.worst_lag() == 0
    assert timeline.longest_gap(KILL) == (0.0, KILL)
    assert timeline.resumed_after(KILL) == 0
    assert timeline.recovered_after(KILL) == 0
    assert timeline.records() == 0


def test_the_description_says_each_number():
    line = killed_and_caught_up().describe(KILL)
    assert "worst lag 12.1 s" in line
    assert "longest gap in copying 12.0 s (from +0.0 s)" in line
    assert "again 15.5 s after the moment" in line


def test_keeping_up_means_recent_records_each_within_a_second():
    now = KILL + 100
    tail = MirrorTail("topic", 1, bootstrap="127.0.0.1:1")  # not started: its timeline alone
    tail.timeline = Timeline(steady(now - 10, now))
    assert tail.keeps_up(5, now=now)
    late = Batch(now - 2, now - 4, now - 2, 10)  # one 2 s late
    tail.timeline = Timeline(sorted([*steady(now - 10, now), late], key=lambda b: b.visible))
    assert not tail.keeps_up(5, now=now)
    assert tail.keeps_up(5, within=3, now=now)
    tail.timeline = Timeline(steady(now - 10, now - 3))  # nothing lately: copying stopped
    assert not tail.keeps_up(5, now=now)
    tail.timeline = Timeline(steady(now - 3, now))  # copying for 3 s only
    assert not tail.keeps_up(5, now=now)
