"""What the link's application knows of its source cluster, read in a thread of its own.

The driver's loop follows the mirror set, acknowledges generations and sends the heartbeat:
none of that may wait on the source. A stopped source makes every admin request wait its
full timeout, and a failover (which happens because the source is down) waits for the
driver's acknowledgement. So the source's partition counts and high watermarks are read here,
once a second (every 5 s once they have not changed for 10 s), and the loop only ever looks at
the latest answer.
"""

from __future__ import annotations

import threading
import time

from infra.kafka_admin import KafkaAdmin, KafkaAdminError

TIMEOUT_S = 15.0  # of its admin's requests
EVERY_S = 1.0  # while the source changes
QUIET_EVERY_S = 5.0  # once it has not for QUIET_AFTER_S (a new topic to watch is read at once)
QUIET_AFTER_S = 10.0
# A read not answered this long says the source is down, though its request has not timed out
# yet (a read that retries can take a minute to fail).
SILENT_S = 10.0


class SourceWatch:
    def __init__(self, admin: KafkaAdmin, wake: threading.Event | None = None):
        self.admin = admin  # the engine's for the cluster, shared by the links that read it
        self._lock = threading.Lock()
        self._wanted: tuple[list[str], list[tuple[str, int]]] = ([], [])
        self._asked = threading.Event()
        self._stopped = threading.Event()
        self.counts: dict[str, int] = {}  # source topic -> partitions
        self.high_watermarks: dict[tuple[str, int], int] = {}
        self.fetched_at_ms = 0  # when the high watermarks were last read
        self.error = ""  # why the last read failed ("" when it did not)
        self._answered = time.monotonic()  # when the source last answered
        self._changed = time.monotonic()  # when what it answered last changed
        # Set when what it read changed (and `wake` with it): an Event, not a callback, so the
        # watch holds no reference back to its reader, which goes as soon as it is done with.
        self.changed = threading.Event()
        self._wake = wake or threading.Event()
        self._thread = threading.Thread(target=self._run, name="source-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._asked.set()

    def watch(self, topics: list[str], partitions: list[tuple[str, int]]) -> None:
        """What to read from now on; a new topic is read at once rather than at the next
        round."""
        with self._lock:
            fresh = not set(topics) <= set(self._wanted[0])
            self._wanted = (sorted(topics), sorted(partitions))
        if fresh:
            self._asked.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            began = time.monotonic()
            self._read()
            quiet = began - self._changed > QUIET_AFTER_S and not self.error
            every = QUIET_EVERY_S if quiet else EVERY_S
            self._asked.wait(max(0.0, every - (time.monotonic() - began)))
            self._asked.clear()

    def _read(self) -> None:
        with self._lock:
            topics, partitions = self._wanted
        try:
            # A source topic deleted meanwhile is left out, and its partitions with it.
            counts = {t: info.partitions for t, info in self.admin.describe_topics(topics).items()}
            watermarks = self.admin.offsets([(t, p) for t, p in partitions if t in counts])
        except KafkaAdminError as exc:
            self.error = str(exc)
            return
        changed = (counts, watermarks) != (self.counts, self.high_watermarks)
        self.counts, self.high_watermarks = counts, watermarks
        self.fetched_at_ms = int(time.time() * 1000)
        self.error = ""
        self._answered = time.monotonic()
        if changed:
            self._changed = self._answered
            self.changed.set()
            self._wake.set()

    def problem(self) -> str:
        """What is wrong with the source, as the heartbeat says it ("" when nothing)."""
        silent = time.monotonic() - self._answered
        if self.error:
            return f"the source cluster does not answer as it should: {self.error}"
        if silent < SILENT_S:
            return ""
        return f"the source cluster has not answered for {silent:.0f} s"
