"""What the engine knows of a source cluster, read in a thread of its own.

A runner's loop follows its link's mirror set, acknowledges generations and sends the
heartbeat: none of that may wait on the source. A stopped source makes every admin request
wait its full timeout, and a failover (which happens because the source is down) waits for
the driver's acknowledgement. So the source's partition counts and high watermarks are read
here, once a second (every 5 s once they have not changed for 10 s), and the loop only ever
looks at the latest answer.

One watch per source (address and settings), shared by every link that reads it: each link
joins with what it wants read, and one round reads all of theirs in two requests, so idle
links cost no request of their own. Links whose source or settings differ have watches of
their own, so a stopped source or a wrong password holds up only its own links.
"""

from __future__ import annotations

import threading
import time

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, Unreachable

TIMEOUT_S = 15.0  # of its admin's requests
EVERY_S = 1.0  # while the source changes
QUIET_EVERY_S = 5.0  # once it has not for QUIET_AFTER_S (a new topic to watch is read at once),
QUIET_PARTITIONS = 1_000  # and 5 s more for each this many partitions beyond the first ones:
# a read of 10,000 partitions' ends took the driver half a second of CPU. A link whose copiers
# write asks for a read at once (`Watcher.ask`), so a source that wakes up is seen within a beat.
QUIET_AFTER_S = 10.0
# A read not answered this long says the source is down, though its request has not timed out
# yet (a read that retries can take a minute to fail).
SILENT_S = 10.0

Counts = dict[str, int]  # source topic -> partitions
Watermarks = dict[tuple[str, int], int]  # (topic, partition) -> high watermark


class Watcher:
    """One link's part of its source's watch: what it wants read, and what was read of it."""

    def __init__(self, watch: SourceWatch, wake: threading.Event):
        self.source = watch
        self.admin = watch.admin
        self.topics: frozenset[str] = frozenset()
        self.partitions: list[tuple[str, int]] = []
        self.counts: dict[str, int] = {}  # source topic -> partitions
        self.high_watermarks: dict[tuple[str, int], int] = {}
        self.error = ""  # why its part could not be read ("" when it was)
        # Set when what was read of it changed (and `wake` with it): Events, not a callback,
        # so the watch holds no reference back to the runner.
        self.changed = threading.Event()
        self._wake = wake

    @property
    def fetched_at_ms(self) -> int:
        """When the high watermarks were last read."""
        return self.source.fetched_at_ms

    def watch(self, topics: list[str], partitions: list[tuple[str, int]]) -> None:
        """What to read from now on; a new topic is read at once rather than at the next
        round."""
        fresh = not set(topics) <= self.topics
        self.topics, self.partitions = frozenset(topics), sorted(partitions)
        if fresh:
            self.source.ask()

    def problem(self) -> str:
        """What is wrong with reading its part of the source, as the heartbeat says it ("" when
        nothing)."""
        if self.error:
            return f"the source cluster does not answer as it should: {self.error}"
        return self.source.problem()

    def ask(self) -> None:
        """Read at once: its copiers wrote, so the source changed."""
        self.source.ask()

    def leave(self) -> None:
        self.source.leave(self)

    def take(self, counts: dict[str, int], watermarks: dict[tuple[str, int], int]) -> None:
        """Its share of a round's answer; wakes its runner when that changed."""
        mine = {t: n for t, n in counts.items() if t in self.topics}
        marks = {tp: watermarks[tp] for tp in self.partitions if tp in watermarks}
        if (mine, marks) != (self.counts, self.high_watermarks):
            self.counts, self.high_watermarks = mine, marks
            self.changed.set()
            self._wake.set()


class SourceWatch:
    def __init__(self, admin: KafkaAdmin):
        self.admin = admin  # the engine's for the cluster, shared by the links that read it
        self._lock = threading.Lock()
        self._watchers: list[Watcher] = []
        self._asked = threading.Event()
        self._stopped = threading.Event()
        self.fetched_at_ms = 0  # when the high watermarks were last read
        self._answered = time.monotonic()  # when the source last answered
        self._changed = time.monotonic()  # when what it answered last changed
        self._last: tuple[Counts, Watermarks] = ({}, {})
        self._thread = threading.Thread(target=self._run, name="source-watch", daemon=True)
        self._thread.start()

    def join(self, wake: threading.Event) -> Watcher:
        """A link's part of the watch; `wake` is set when what was read of it changed."""
        watcher = Watcher(self, wake)
        with self._lock:
            self._watchers.append(watcher)
        return watcher

    def leave(self, watcher: Watcher) -> None:
        with self._lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def ask(self) -> None:
        """Read at once (a link wants a topic not read yet)."""
        self._asked.set()

    def stop(self) -> None:
        self._stopped.set()
        self._asked.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            began = time.monotonic()
            with self._lock:
                watchers = list(self._watchers)
            if not watchers:  # nothing to read until a link joins and asks
                self._asked.wait()
                self._asked.clear()
                continue
            partitions = self._read(watchers)
            troubled = any(w.error for w in watchers)
            quiet = began - self._changed > QUIET_AFTER_S and not troubled
            every = QUIET_EVERY_S * max(1, partitions // QUIET_PARTITIONS) if quiet else EVERY_S
            self._asked.wait(max(0.0, every - (time.monotonic() - began)))
            self._asked.clear()

    def _read(self, watchers: list[Watcher]) -> int:
        """One round for every watcher, in one read of all their parts; when the source
        answers but refuses that (a partition without a leader, a topic refused), a read of
        each part on its own, so that one link's trouble is its own. How many partitions it
        read."""
        topics = sorted(set().union(*(w.topics for w in watchers)))
        partitions = sorted({tp for w in watchers for tp in w.partitions})
        try:
            counts, watermarks = self._ends(topics, partitions)
        except KafkaAdminError as exc:
            if len(watchers) == 1 or isinstance(exc, Unreachable):
                # A source that does not answer fails each link's read alike (each after its
                # whole timeout): read once, said to all.
                for watcher in watchers:
                    watcher.error = str(exc)
            else:
                for watcher in watchers:
                    self._read([watcher])
            return len(partitions)
        if (counts, watermarks) != self._last:
            self._last = (counts, watermarks)
            self._changed = self._answered
        for watcher in watchers:
            watcher.error = ""
            watcher.take(counts, watermarks)
        return len(partitions)

    def _ends(
        self, topics: list[str], partitions: list[tuple[str, int]]
    ) -> tuple[Counts, Watermarks]:
        # A source topic deleted meanwhile is left out, and its partitions with it.
        counts = {t: info.partitions for t, info in self.admin.describe_topics(topics).items()}
        watermarks = self.admin.offsets([(t, p) for t, p in partitions if t in counts])
        self.fetched_at_ms = int(time.time() * 1000)
        self._answered = time.monotonic()
        return counts, watermarks

    def problem(self) -> str:
        """Whether the source has gone silent ("" when it answers)."""
        silent = time.monotonic() - self._answered
        if silent < SILENT_S:
            return ""
        return f"the source cluster has not answered for {silent:.0f} s"
