"""Taking what a consumer holds (`infra.consuming`), against a model of librdkafka's calls: no
broker needed to see how long a take waits."""

from __future__ import annotations

import time

from infra import consuming


class _Queue:
    """librdkafka's consume as it behaves: it returns once it has `n` records or its timeout
    passed; poll returns at the first record."""

    def __init__(self, records: list[str], arrive_after: float):
        self.records, self.at = records, time.monotonic() + arrive_after

    def _arrived(self) -> list[str]:
        return self.records if time.monotonic() >= self.at else []

    def consume(self, n: int, timeout: float) -> list[str]:
        until = time.monotonic() + timeout
        while len(self._arrived()) < n and time.monotonic() < until:
            time.sleep(0.001)
        taken = self._arrived()[:n]
        del self.records[: len(taken)]
        return taken

    def poll(self, timeout: float) -> str | None:
        until = time.monotonic() + timeout
        while not self._arrived() and time.monotonic() < until:
            time.sleep(0.001)
        return self.consume(1, 0)[0] if self._arrived() else None


def test_the_records_that_came_are_taken_without_waiting_for_a_full_batch():
    began = time.monotonic()
    assert consuming.take(_Queue(["r1", "r2"], arrive_after=0.01), 10, 0.5) == ["r1", "r2"]
    assert time.monotonic() - began < 0.25  # not the wait's 0.5 s

    assert consuming.take(_Queue(["r3", "r4"], arrive_after=0), 1, 0.5) == ["r3"]
    began = time.monotonic()
    assert consuming.take(_Queue([], arrive_after=0), 10, 0.2) == []
    assert time.monotonic() - began >= 0.2  # nothing came: the whole wait
