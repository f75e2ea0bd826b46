"""Consumer offset sync for merge flows, on simulated logs: whatever the interleaving of local
writes and copies, a group moved through the checkpoints skips no record it had not read, and
reads again at most the bound it is given."""

from __future__ import annotations

import random

import pytest

from replication.topics.flow_offsets import translate

MARKER = None  # a commit marker: takes an offset, holds no record


class Flow:
    """A one-to-one copy of one partition from `source` into `destination`, skipping records
    that came from the destination, committing one transaction per step (a marker after its
    records) and checkpointing (next, dest) after each."""

    def __init__(self, source: list, destination: list, home: str):
        self.source, self.destination, self.home = source, destination, home
        self.next = self.dest = 0
        self.checkpoints: list[tuple[int, int]] = []
        self.copies: dict[tuple, int] = {}  # record -> its offset in the destination

    def step(self, rng: random.Random) -> None:
        end = min(len(self.source), self.next + rng.randint(1, 6))
        copied = False
        for offset in range(self.next, end):
            record = self.source[offset]
            if record is MARKER or record[0] == self.home:
                continue
            self.copies[record] = len(self.destination)
            self.destination.append(record)
            self.dest = len(self.destination)
            copied = True
        if copied:
            self.destination.append(MARKER)
        self.next = end
        self.checkpoints.append((self.next, self.dest))


def simulate(seed: int, both_ways: bool) -> tuple[list, list, Flow, Flow | None]:
    rng = random.Random(seed)
    a: list = []
    b: list = []
    forward = Flow(a, b, "B")
    back = Flow(b, a, "A") if both_ways else None
    for n in range(300):
        roll = rng.random()
        if roll < 0.35:
            a.append(("A", n))
        elif roll < 0.55 and both_ways:
            b.append(("B", n))
        elif roll < 0.8:
            forward.step(rng)
        elif back is not None:
            back.step(rng)
    return a, b, forward, back


def sampled(flow: Flow | None, rng: random.Random) -> list[tuple[int, int]] | None:
    """What the beat kept: some of the checkpoints, as sampling every 10 s would, and none of
    the newest ones it has not sampled yet (the logs have moved on since)."""
    if flow is None:
        return None
    taken = flow.checkpoints[: rng.randint(0, len(flow.checkpoints))]
    return [c for c in taken if rng.random() < 0.3]


@pytest.mark.parametrize("both_ways", [False, True], ids=["one-way", "active-active"])
@pytest.mark.parametrize("seed", range(100))
def test_a_moved_group_skips_nothing_and_repeats_within_its_bound(seed, both_ways):
    a, b, forward, back = simulate(seed, both_ways)
    rng = random.Random(seed + 1000)
    kept_forward, kept_back = sampled(forward, rng), sampled(back, rng)
    place_on_a = {record: offset for offset, record in enumerate(a) if record is not MARKER}
    place_on_b = {record: offset for offset, record in enumerate(b) if record is not MARKER}
    for committed in range(len(a) + 1):
        place = translate(committed, kept_forward, kept_back)
        if place.behind:
            assert committed > max((s for s, _ in kept_forward), default=0)
            continue
        read = {r for r, offset in place_on_a.items() if offset < committed}
        for record, offset in place_on_b.items():
            if record not in read:
                # Not read on A (or not there at all yet): never below where the group goes.
                assert offset >= place.offset, (committed, record, offset, place)
        again = [r for r, offset in place_on_b.items() if offset >= place.offset and r in read]
        assert len(again) <= place.may_repeat, (committed, place)


def test_a_group_at_a_checkpoint_moves_exactly_with_nothing_to_read_again():
    place = translate(100, [(50, 40), (100, 90), (150, 130)])
    assert (place.offset, place.may_repeat) == (90, 0)


def test_a_group_between_checkpoints_moves_to_the_earlier_one_and_is_told_the_gap():
    place = translate(120, [(50, 40), (100, 90), (150, 130)])
    assert (place.offset, place.may_repeat) == (90, 40)


def test_a_group_past_the_newest_checkpoint_is_left_where_it_is():
    assert translate(151, [(50, 40), (150, 130)]).behind
    assert translate(5, []).behind
    assert translate(0, []).offset == 0


def test_a_group_past_the_way_backs_newest_checkpoint_may_read_again_what_it_copied_since():
    # A: its own 30 at 0-29, then the way back's copies of B's 30. B: the copies of A's 30 at
    # 0-29, then its own 30. The way back's newest checkpoint kept is from before it copied.
    place = translate(40, [(60, 30)], [(30, 0)])
    assert place.offset == 0
    assert place.may_repeat >= 40  # A's 30 and B's first 10, read on A already


def test_a_group_older_than_every_checkpoint_starts_from_the_beginning():
    place = translate(10, [(50, 40)])
    assert (place.offset, place.may_repeat) == (0, 40)
