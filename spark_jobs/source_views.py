"""What a mirror copier reads its link's source through: a `View`, which answers the calls a
copier makes of a consumer of its own from the slot's shared readers (`source_readers`): records
handed over by a reader others share, or read by the copier itself from a reader it alone uses;
and every change to a partition drops what was buffered of it. Apart from the readers so that
each side of the hand-over is one class of its own module: the readers pool consumers and run
their threads, the view buffers and answers a copier."""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import ClusterMetadata

from infra import consuming
from infra.consuming import Consumed

if TYPE_CHECKING:
    from .source_readers import Reader, Readers

BATCH = 10_000  # records taken from the consumer at a time
FULL = 2 * BATCH  # records buffered for a view before its reader holds back
ROOM = BATCH  # and below which it reads on

TP = tuple[str, int]


class View:
    """What a copier reads its link's source through: the calls of a consumer of its own that
    it makes, answered by the readers its partitions are on."""

    def __init__(self, readers: Readers, config: dict[str, str]):
        self.readers, self.config = readers, config
        self.where: dict[TP, Reader] = {}
        # Its partitions on each reader, changed under that reader's lock: another reader's
        # thread may ask `reads_alone` meanwhile.
        self.on: collections.Counter[Reader] = collections.Counter()
        self.buffer: collections.deque[Consumed] = collections.deque()
        self.ready = threading.Condition()
        self.failed = ""
        self.woken = False  # see `wake`

    # --- what readers call --------------------------------------------------------------------

    def put(self, msgs: list[Consumed], failed: str = "") -> None:
        with self.ready:
            self.buffer.extend(msgs)
            self.failed = self.failed or failed
            self.ready.notify_all()

    def full(self) -> bool:
        return len(self.buffer) >= FULL

    def nudge(self) -> None:
        """End a wait for records handed over (they will not come: see Reader.turn)."""
        with self.ready:
            self.ready.notify_all()

    def reads_alone(self, reader: Reader) -> bool:
        """Whether this view's copier reads `reader` itself: every partition of the view is on
        it, and it serves no other view (asked under the reader's lock)."""
        return len(self.on) == 1 and reader in self.on and len(reader.parts) == 1

    def has_room(self) -> bool:
        return len(self.buffer) < ROOM

    def wait_for_room(self, timeout: float) -> None:
        with self.ready:
            self.ready.wait_for(self.has_room, timeout)

    def drop(self, tps: set[TP]) -> None:
        """Forget what was read of these partitions and not yet taken."""
        with self.ready:
            if self.buffer:
                self.buffer = collections.deque(
                    m for m in self.buffer if (m.topic(), m.partition()) not in tps
                )
            self.ready.notify_all()

    # --- a consumer's calls -------------------------------------------------------------------

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        reader = self.readers.first(self.config)
        with reader.changing():
            found: ClusterMetadata = reader.consumer.list_topics(topic, timeout=timeout)
        return found

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        by_tp = {(tp.topic, tp.partition): tp for tp in partitions}
        for reader, tps in self.readers.for_partitions(self, list(by_tp)).items():
            with reader.changing():
                reader.assign(self, [by_tp[tp] for tp in tps])
                self.drop(set(tps))
                for tp in tps:
                    self.where[tp] = reader
                self.on[reader] += len(tps)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        for reader, tps in self._by_reader(partitions).items():
            if not reader.dead:
                with contextlib.suppress(KafkaException), reader.changing():
                    reader.unassign(self, tps)
            self._left(reader, tps)
            self.drop(set(tps))
            self.readers.let_go(reader, tps)

    def pause(self, partitions: list[TopicPartition]) -> None:
        for reader, tps in self._by_reader(partitions).items():
            with reader.changing():
                reader.pause(tps)
                self.drop(set(tps))

    def resume(self, partitions: list[TopicPartition]) -> None:
        for reader, tps in self._by_reader(partitions).items():
            with reader.changing():
                reader.resume(tps)
                self.drop(set(tps))

    def seek(self, partition: TopicPartition) -> None:
        tp = (partition.topic, partition.partition)
        reader = self.where[tp]
        with reader.changing():
            reader.consumer.seek(partition)
            reader.positions.pop(tp, None)
            self.drop({tp})

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Where the consumer reads next (past transaction markers, which the copier never
        sees), as its reader noted it while the source was quiet and the copier had taken
        every record read; -1 where that is not known."""
        quiet = not self.buffer
        result = []
        for tp in partitions:
            key = (tp.topic, tp.partition)
            reader = self.where.get(key)
            offset = reader.positions.get(key, -1) if quiet and reader is not None else -1
            result.append(TopicPartition(tp.topic, tp.partition, offset))
        return result

    def wake(self) -> None:
        """End a wait in `poll` (the copier has something else to do)."""
        with self.ready:
            self.woken = True
            self.ready.notify_all()

    def take(self, n: int, timeout: float) -> list[Consumed]:
        """Up to `n` records: those read already, at once; else the first to come within
        `timeout` (its reader's own wait at most, when the copier reads it itself), or none
        once the copier is woken."""
        reader = self._alone_on()
        if reader is not None:
            reader.let_changes_in()
            with reader.lock:
                if reader.dead:
                    raise KafkaException(f"the source reader stopped: {reader.dead}")
                if not self.buffer and not self.woken and self.reads_alone(reader):
                    batch = consuming.take(reader.consumer, n, min(timeout, reader.wait_s()))
                    reader.read(batch)
                    return batch
        with self.ready:  # records handed over, by a reader other views share
            if not self.buffer and not self.failed and not self.woken:
                self.ready.wait(timeout)
            self.woken = False
            return self._take(n)

    def close(self) -> None:
        if self.where:
            self.incremental_unassign([TopicPartition(*tp) for tp in self.where])
        self.readers.leave(self)

    def _take(self, n: int) -> list[Consumed]:
        if self.failed:
            failed, self.failed = self.failed, ""
            raise KafkaException(f"the source reader stopped: {failed}")
        buffer = self.buffer
        if n >= len(buffer):
            taken = list(buffer)
            buffer.clear()
        else:
            taken = [buffer.popleft() for _ in range(n)]
        if len(buffer) < ROOM:
            self.ready.notify_all()  # a reader waiting for room
        return taken

    def _alone_on(self) -> Reader | None:
        """The reader this view's copier reads itself, if it may (see `reads_alone`)."""
        if len(self.on) != 1:
            return None
        reader = next(iter(self.on))
        return reader if len(reader.parts) == 1 else None

    def _left(self, reader: Reader, tps: list[TP]) -> None:
        for tp in tps:
            del self.where[tp]
        self.on[reader] -= len(tps)
        if self.on[reader] <= 0:
            del self.on[reader]

    def _by_reader(self, partitions: list[TopicPartition]) -> dict[Reader, list[TP]]:
        grouped: dict[Reader, list[TP]] = collections.defaultdict(list)
        for tp in partitions:
            key = (tp.topic, tp.partition)
            if key in self.where:
                grouped[self.where[key]].append(key)
        return grouped
