"""A slot's consumers of source clusters, shared by its copiers.

Each copier reads its link's source through a `View`. The views of every link that reaches the
same source with the same client settings share one consumer (a `Reader`) and its thread, so a
link adds no consumer, and none of a consumer's threads that wake on their own timers: the idle
cost of a slot's reading stops growing with its links. A source partition that two links of one
slot both copy is read by a second consumer of that source (a consumer holds one position per
partition); a link whose source or credentials differ has a consumer of its own, so a source
that is down or a wrong password holds up no other link.

A reader that serves one view alone (the usual case: one link per source in a slot) is read by
that view's copier itself, in the copier's thread, as a consumer of its own would be: a thread
handing records over to another cost a catch-up 10-20% more CPU and records/s. A reader that
serves more views consumes in its own thread and hands each record to the view that holds its
partition. Every call on the consumer is made under the reader's lock, which is held from each
consume until what it read is handed over (the client serializes calls on a consumer, and a
call from another thread would starve between consumes). A change to a partition (assign,
unassign, pause, resume, seek) also drops what the view had buffered of that partition: as with
a consumer of one's own, no record read before a change is seen after it. A copier that falls
behind makes its reader wait (alone on it) or has its partitions paused until it catches up
(beside others): its buffer stays bounded and the others read on.

This module is the readers (consumers pooled by source, each with its thread); a copier's side of
them, its `View`, is `source_views`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from infra import consuming
from infra.consuming import Consumed

from . import reading, shared_clients
from .source_views import BATCH, View

__all__ = ["BATCH", "Reader", "Readers", "View"]

log = logging.getLogger("spark_jobs.source_readers")

# The longest a change to a partition waits for the reader's consume to end, while records
# flow and while the source is quiet (see Reader.wait_s).
WAIT_S = 0.05
QUIET_WAIT_S = 0.2
NOTE_S = 1.0  # how often a quiet reader notes its positions
LONG_QUIET_S = 10.0  # once nothing came for this long, only this often (a marker shows later)
IDLE_S = 1.0  # a reader with no partition sleeps this long between looks
SHARED_FETCH_WAIT_MS = 500

TP = tuple[str, int]
ConsumerFactory = Callable[[dict[str, Any]], Consumer]  # tests may pass a fake


class Readers:
    """The slot's readers, pooled by source settings."""

    def __init__(self, name: str, consumer: ConsumerFactory = Consumer):
        self.name, self.make_consumer = name, consumer
        self.lock = threading.Lock()
        self.pools: dict[str, list[Reader]] = {}
        self.views: collections.Counter[str] = collections.Counter()

    def view(self, config: dict[str, str]) -> View:
        with self.lock:
            self.views[shared_clients.config_key(config)] += 1
        return View(self, config)

    def count(self) -> int:
        """How many consumers the slot holds."""
        with self.lock:
            return sum(len(pool) for pool in self.pools.values())

    def first(self, config: dict[str, str]) -> Reader:
        with self.lock:
            return self._pool(config)[0]

    def for_partitions(self, view: View, tps: list[TP]) -> dict[Reader, list[TP]]:
        """Where each partition is read: the first reader of the view's source that holds it
        for nobody else, a new one if none. Noted at once, so two views never pick one
        reader for the same partition."""
        chosen: dict[Reader, list[TP]] = collections.defaultdict(list)
        with self.lock:
            pool = self._pool(view.config)
            for tp in tps:
                reader = next((r for r in pool if r.taken.get(tp, view) is view), None)
                if reader is None:
                    reader = Reader(view.config, f"{self.name}-{len(pool)}", self.make_consumer)
                    pool.append(reader)
                reader.taken[tp] = view
                chosen[reader].append(tp)
        return chosen

    def let_go(self, reader: Reader, tps: list[TP]) -> None:
        """Those partitions left `reader`: a reader left holding none is closed (a consumer
        with nothing to read still wakes on its timers; the next one is made when needed)."""
        with self.lock:
            for tp in tps:
                reader.taken.pop(tp, None)
            pool = self.pools.get(reader.key, [])
            closing = not reader.taken and reader in pool
            if closing:
                pool.remove(reader)
        if closing:
            reader.close()

    def leave(self, view: View) -> None:
        """A view closed: its source's readers close with the last of its views."""
        key = shared_clients.config_key(view.config)
        with self.lock:
            self.views[key] -= 1
            if self.views[key] > 0:
                return
            del self.views[key]
            pool = self.pools.pop(key, [])
        for reader in pool:
            reader.close()

    def close(self) -> None:
        with self.lock:
            pools, self.pools = self.pools, {}
        for pool in pools.values():
            for reader in pool:
                reader.close()

    def _pool(self, config: dict[str, str]) -> list[Reader]:
        key = shared_clients.config_key(config)
        pool = self.pools.setdefault(key, [])
        pool[:] = [r for r in pool if not r.dead]
        if not pool:
            pool.append(Reader(config, f"{self.name}-0", self.make_consumer))
        return pool


class Reader:
    """One consumer of a source and the thread that alone consumes from it."""

    def __init__(self, config: dict[str, str], name: str, consumer: ConsumerFactory = Consumer):
        self.key = shared_clients.config_key(config)
        self.consumer = consumer(
            {
                **config,
                "group.id": "_isthmus-engine",  # assigned partitions only, never commits
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                # A position no longer on the source (retention) resumes at its log start:
                # a gap, translated like any other.
                "auto.offset.reset": "earliest",
                **reading.FAST_FETCH,
                # Shorter than a merge flow's consumer: a request to the source (metadata of a
                # new topic) waits behind the fetch in flight, and partitions assigned meanwhile
                # join only the next fetch. Not shorter still: a quiet reader's fetch asks for
                # all its partitions each time (librdkafka has no fetch sessions), and at 2,000
                # idle partitions 200 ms took the engine from 6.5% to 9.3% of a core.
                "fetch.wait.max.ms": SHARED_FETCH_WAIT_MS,
            }
        )
        self.lock = threading.Lock()
        self.waiting = 0  # changes waiting for the lock: the thread lets them in first
        self.counting = threading.Lock()
        self.taken: dict[TP, View] = {}  # chosen for a view (see Readers.for_partitions)
        self.parts: dict[View, set[TP]] = {}  # assigned, by view
        self.owners: dict[TP, View] = {}
        self.throttled: set[TP] = set()  # paused while their view catches up
        self.held: set[TP] = set()  # paused by their view
        self.closed = False
        self.dead = ""  # why its thread stopped
        self.last_record = 0.0
        # Where the consumer reads next, noted while the source is quiet (see `note`).
        self.positions: dict[TP, int] = {}
        self.noted = 0.0
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"reader-{name}", daemon=True)
        self.thread.start()

    @contextlib.contextmanager
    def changing(self) -> Iterator[None]:
        """Hold the reader between its consumes, to change or read its partitions."""
        with self.counting:  # `+=` is not atomic between threads
            self.waiting += 1
        try:
            with self.lock:
                if self.dead:
                    raise KafkaException(f"the source reader stopped: {self.dead}")
                yield
        finally:
            with self.counting:
                self.waiting -= 1
            self.wake.set()

    def run(self) -> None:
        try:
            while not self.closed:
                with self.lock:
                    views, alone = self.turn()
                if not views:
                    self.wake.wait(IDLE_S)
                    self.wake.clear()
                elif alone is not None:
                    alone.wait_for_room(IDLE_S)
                self.let_changes_in()
        except Exception as exc:  # its views see it on their next read and start again
            self.dead = str(exc) or type(exc).__name__
            log.warning("A source reader stopped: %s", self.dead)
            for view in list(self.parts):
                view.put([], failed=self.dead)
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                self.consumer.close()

    def turn(self) -> tuple[list[View], View | None]:
        """One consume for the views this thread serves, under the lock: the views (none
        when there is nothing for it to do), and the one view it waits on (the only one, whose
        copier fell behind)."""
        views = list(self.parts)
        if len(views) == 1 and views[0].reads_alone(self):
            # Its copier reads it (View.take): this thread stays out. What it paused beside
            # other views goes on, and a wait for records handed over ends (none will come).
            if self.throttled - self.held:
                self.consumer.resume([TopicPartition(*tp) for tp in self.throttled - self.held])
            self.throttled.clear()
            views[0].nudge()
            return [], None
        if len(views) == 1 and views[0].full():
            return views, views[0]  # nobody else waits on this reader
        if views:
            self.throttle(views)
            batch = consuming.take(self.consumer, BATCH, self.wait_s())
            self.read(batch)
            if batch:
                self.hand_over(batch)
        return views, None

    def let_changes_in(self) -> None:
        """Wait while a change to partitions waits for the lock: it goes first."""
        while self.waiting > 0 and not self.closed:
            time.sleep(0.0005)

    def wait_s(self) -> float:
        """How long a consume waits for a record: short while records flow, so that a change
        waits little; longer when the source is quiet, so that an idle reader wakes rarely."""
        return WAIT_S if time.monotonic() - self.last_record < 1 else QUIET_WAIT_S

    def throttle(self, views: list[View]) -> None:
        """Beside other views, a view that fell behind has its partitions paused (the
        consumer drops what it fetched of them, and fetches again once resumed)."""
        if len(views) < 2 and not self.throttled:
            return
        for view in views:
            if view.full():
                pause = self.parts[view] - self.throttled - self.held
                if pause:
                    self.consumer.pause([TopicPartition(*tp) for tp in pause])
                    self.throttled |= pause
            elif self.throttled and view.has_room():
                resume = (self.parts[view] & self.throttled) - self.held
                if resume:
                    self.consumer.resume([TopicPartition(*tp) for tp in resume])
                    self.throttled -= resume

    def note(self) -> None:
        """The source is quiet: note where each partition reads next, past any transaction
        marker (read but never handed over), once a second; once it has been quiet for long,
        every 10 s (asking for thousands of positions each second cost a slot 3% of a core)."""
        now = time.monotonic()
        every = NOTE_S if now - self.last_record < LONG_QUIET_S else LONG_QUIET_S
        if now - self.noted >= every:
            self.noted = now
            tps = [TopicPartition(*tp) for tp in self.owners]
            self.positions = {(p.topic, p.partition): p.offset for p in self.consumer.position(tps)}

    def read(self, batch: list[Consumed]) -> None:
        """Note what a consume returned: positions moved, or the source was quiet."""
        if batch:
            self.noted = 0.0
            self.last_record = time.monotonic()
        else:
            self.note()

    def hand_over(self, batch: list[Consumed]) -> None:
        if len(self.parts) == 1:
            next(iter(self.parts)).put(batch)
            return
        routed: dict[View, list[Consumed]] = collections.defaultdict(list)
        owners = self.owners
        for msg in batch:
            view = owners.get((msg.topic(), msg.partition()))
            if view is not None:
                routed[view].append(msg)
            elif msg.error() is not None:  # of the client, or of a topic: all who read it
                topic = msg.topic()
                for v, tps in self.parts.items():
                    if topic is None or any(tp[0] == topic for tp in tps):
                        routed[v].append(msg)
        for view, msgs in routed.items():
            view.put(msgs)

    # --- what views call, under `changing` ----------------------------------------------------

    def assign(self, view: View, tps: list[TopicPartition]) -> None:
        self.consumer.incremental_assign(tps)
        mine = self.parts.setdefault(view, set())
        for tp in tps:
            mine.add((tp.topic, tp.partition))
            self.owners[tp.topic, tp.partition] = view
            self.positions.pop((tp.topic, tp.partition), None)
        self.noted = 0.0

    def unassign(self, view: View, tps: list[TP]) -> None:
        self.consumer.incremental_unassign([TopicPartition(*tp) for tp in tps])
        mine = self.parts.get(view, set())
        mine.difference_update(tps)
        if not mine:
            self.parts.pop(view, None)
        for tp in tps:
            self.owners.pop(tp, None)
            self.positions.pop(tp, None)
            self.throttled.discard(tp)
            self.held.discard(tp)

    def pause(self, tps: list[TP]) -> None:
        fresh = [tp for tp in tps if tp not in self.throttled]
        if fresh:
            self.consumer.pause([TopicPartition(*tp) for tp in fresh])
        self.held.update(tps)

    def resume(self, tps: list[TP]) -> None:
        self.consumer.resume([TopicPartition(*tp) for tp in tps])
        self.held.difference_update(tps)
        self.throttled.difference_update(tps)

    def close(self) -> None:
        self.closed = True
        self.wake.set()
        self.thread.join(QUIET_WAIT_S + IDLE_S + 5)
