"""The gap in copying, measured from record timestamps: how far behind its source a mirror
fell while a fault lasted, and how soon it was back under a second of lag.

    writer = StampedWriter(topic, partitions, per_second=5_000)  # source records, stamped now
    tail = MirrorTail(topic, partitions)                         # the mirror, on the destination
    writer.start(); tail.start()
    ...                                      # until tail.keeps_up(5): copying, within 1 s
    ...                                      # once copying: kill = time.time(); the fault
    written = writer.finish()
    timeline = tail.finish(written, timeout=120)  # every record seen, or AssertionError
    timeline.recovered_after(kill)  # s after the kill until every record is visible within
                                    # 1 s of its timestamp again (for the rest of the run)
    timeline.worst_lag(since=kill)  # s: the longest a record waited to be visible
    timeline.longest_gap(since=kill)  # (s, from): the longest time no record became visible
    timeline.resumed_after(kill)  # s after the kill to that gap's end: copying again
    print(timeline.describe(kill))

The writer stamps each record with the producer's clock (CreateTime), which a mirror keeps;
the tail, a read_committed consumer of the mirror, notes the wall clock at which each batch of
records became visible to it. Both run in this process, so both clocks are the same. A record
whose timestamp is `ts` and that became visible at `v` kept the mirror more than `within`
seconds behind from `ts + within` until `v`; the mirror is back under `within` after the last
such `v`. Record by record exactness is `tests.mirror_checks.assert_exact_copy`'s job.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from devstack import kafka
from infra import consuming
from tests import leftovers


@dataclass(frozen=True)
class Batch:
    """Records that became visible together: when, their oldest and newest timestamps (s)."""

    visible: float
    oldest: float
    newest: float
    count: int


@dataclass
class Timeline:
    """What a `MirrorTail` saw, batch by batch in the order seen. Times in seconds since the
    epoch."""

    batches: list[Batch] = field(default_factory=list)

    def _since(self, since: float | None) -> list[Batch]:
        return [b for b in self.batches if since is None or b.visible >= since]

    def worst_lag(self, since: float | None = None) -> float:
        """The longest a record (visible at or after `since`) waited to be visible."""
        return max((b.visible - b.oldest for b in self._since(since)), default=0.0)

    def longest_gap(self, since: float | None = None) -> tuple[float, float]:
        """The longest time, from `since` on, in which no record became visible, and when it
        began: (seconds, start). While the source is written steadily, that is copying
        stopped."""
        times = [b.visible for b in self._since(since)]
        if since is not None and times:
            times.insert(0, since)
        gaps = [(later - earlier, earlier) for earlier, later in itertools.pairwise(times)]
        return max(gaps, default=(0.0, since or 0.0))

    def resumed_after(self, moment: float) -> float:
        """Seconds from `moment` to the end of the longest gap in copying after it: when
        copying resumed after a fault at `moment`."""
        gap, began = self.longest_gap(moment)
        return began + gap - moment

    def recovered_after(self, moment: float, within: float = 1.0) -> float:
        """Seconds from `moment` until every record is visible within `within` seconds of its
        timestamp again, for the rest of the timeline: the last late record's visibility, 0
        when none was late after `moment`."""
        late = [b.visible for b in self._since(moment) if b.visible - b.oldest > within]
        return max(late, default=moment) - moment

    def records(self) -> int:
        return sum(b.count for b in self.batches)

    def describe(self, moment: float, within: float = 1.0) -> str:
        """The measurements after `moment`, in a line for a test's output."""
        gap, began = self.longest_gap(moment)
        return (
            f"worst lag {self.worst_lag(moment):.1f} s, longest gap in copying {gap:.1f} s "
            f"(from {began - moment:+.1f} s), every record visible within {within:g} s of its "
            f"timestamp again {self.recovered_after(moment, within):.1f} s after the moment "
            f"({self.records():,} records seen)"
        )


class StampedWriter(threading.Thread):
    """Writes `per_second` records to the source's `topic` on a thread of its own until
    `finish()`: record i has key i, header i, 100 random bytes, partition i % `partitions`,
    and the producer's clock as timestamp. Idempotent (each record once whatever the
    brokers do) and patient (a record is retried for up to 5 minutes), so it writes through
    a fault on the source side too."""

    def __init__(self, topic: str, partitions: int, per_second: float = 5_000):
        super().__init__(daemon=True)
        self.topic, self.partitions, self.per_second = topic, partitions, per_second
        self.finishing = threading.Event()
        self.written = 0
        self.unacknowledged = -1  # until it has flushed

    def run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": kafka.SOURCE.bootstrap,
                "linger.ms": 5,
                "enable.idempotence": True,
                "message.timeout.ms": 300_000,
                "queue.buffering.max.messages": 2_000_000,
            }
        )
        started = time.monotonic()
        while not self.finishing.is_set():
            # Every 10 ms, the records due by now: the rate holds however late a round is.
            due = int((time.monotonic() - started) * self.per_second)
            for i in range(self.written, due):
                producer.produce(
                    self.topic,
                    key=str(i).encode(),
                    value=random.randbytes(100),
                    partition=i % self.partitions,
                    headers=[("i", str(i).encode())],
                )
            self.written = max(self.written, due)
            producer.poll(0)
            time.sleep(0.01)
        self.unacknowledged = producer.flush(300)

    def finish(self) -> int:
        """Stop writing; how many records were written, once every one is acknowledged."""
        self.finishing.set()
        self.join()
        assert self.unacknowledged == 0, f"{self.unacknowledged} records not acknowledged"
        return self.written


class MirrorTail(threading.Thread):
    """Reads the destination's `topic` (a mirror) from its beginning, as its records become
    visible (read_committed), from when it exists, on a thread of its own, noting when each
    batch of them did (`Timeline`)."""

    def __init__(self, topic: str, partitions: int, bootstrap: str | None = None):
        super().__init__(daemon=True)
        self.topic, self.partitions = topic, partitions
        self.bootstrap = bootstrap or kafka.DESTINATION.bootstrap
        self.timeline = Timeline()
        self.finishing = threading.Event()

    def run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": leftovers.unique_name("tail"),  # assigned: never joined
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 50,  # a record seen at most this late
            }
        )
        try:
            while not self.finishing.is_set() and not self._mirror_there(consumer):
                time.sleep(0.2)
            consumer.assign(
                [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
            )
            while not self.finishing.is_set():
                batch = [m for m in consuming.take(consumer, 10_000, 0.2) if not m.error()]
                if batch:
                    stamps = [m.timestamp()[1] / 1000 for m in batch]
                    self.timeline.batches.append(
                        Batch(time.time(), min(stamps), max(stamps), len(batch))
                    )
        finally:
            consumer.close()

    def _mirror_there(self, consumer: Consumer) -> bool:
        found = consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
        return found is not None and found.error is None and len(found.partitions) > 0

    def keeps_up(self, seconds: float, within: float = 1.0, now: float | None = None) -> bool:
        """Whether, over the last `seconds` (before `now`), records became visible (the last
        within a second of now) and every one within `within` of its timestamp: copying, and
        keeping up."""
        now = now or time.time()
        recent = [b for b in self.timeline.batches[-10_000:] if b.visible >= now - seconds]
        return (
            bool(recent)
            and recent[0].visible <= now - seconds + 1
            and recent[-1].visible >= now - 1
            and all(b.visible - b.oldest <= within for b in recent)
        )

    def finish(self, expected: int, timeout: float = 120) -> Timeline:
        """Once `expected` records are seen (within `timeout`), stop reading and return what
        was seen; AssertionError if they were not."""
        deadline = time.monotonic() + timeout
        while self.timeline.records() < expected and time.monotonic() < deadline:
            time.sleep(0.2)
        self.finishing.set()
        self.join()
        seen = self.timeline.records()
        assert seen >= expected, f"{seen} of {expected} records visible on {self.topic}"
        return self.timeline
