"""The batch path's reading: a copier's fetches of raw record batches from its link's source
(`infra.kafka_wire`), one Fetch in flight to each source broker that leads a partition it copies,
each asked for again as soon as the last one's batches are chosen (`fetch_ahead`), so that the
next batches come while these are written.

It answers the calls the copier makes of a consumer (`copier_clients.Source`): partitions are
assigned and unassigned at an offset, and `position` is exact (where the next fetch starts,
past transaction markers and aborted batches). A fetch's answer for a partition whose position
changed meanwhile (unassigned, assigned again) is dropped. A partition whose leader moved waits
for the source's metadata to say where it went; one whose position fell below its log start
(retention) goes on from the log start, a gap translated like any other.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from infra import kafka_wire
from infra.kafka_wire import Connection, Fetched, Settings, WireError

log = logging.getLogger("spark_jobs.copier")

TP = tuple[str, int]
WAIT_MS = 500  # a fetch's longest wait on the broker for records (as the shared readers')
PER_PARTITION = 8 << 20  # bytes of a partition a fetch takes at most
PER_FETCH = 64 << 20
RETRY_S = 0.2  # how long a partition without a leader waits before the metadata is asked again
TIMEOUT_S = 30.0  # a connection's longest wait for an answer


class BatchSource:
    """A copier's fetches from its link's source, by partition leader."""

    def __init__(self, config: dict[str, str]):
        self.settings = Settings.of(config)
        self.positions: dict[TP, int] = {}
        self.held: set[TP] = set()  # paused: not fetched
        self.leaders: dict[TP, int] = {}  # node id, -1 while unknown
        self.brokers: dict[int, str] = {}
        self.connections: dict[int, Connection] = {}
        self.asked: dict[int, dict[TP, int]] = {}  # a fetch in flight: the positions it asked
        self.stale = True  # the metadata must be asked again
        self.retry_at = 0.0
        self.error = ""  # the last trouble reaching the source, "" once it is over
        self.bytes = 0  # fetched

    # --- what a copier calls of a consumer ------------------------------------------------------

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.positions[tp.topic, tp.partition] = tp.offset
            if (tp.topic, tp.partition) not in self.leaders:
                self.stale = True

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop((tp.topic, tp.partition), None)
            self.held.discard((tp.topic, tp.partition))

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1))
            for tp in partitions
        ]

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        self.stale = True  # a new topic's leaders: asked before the next fetch

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Fetch no more of these partitions until they are resumed."""
        self.held.update((tp.topic, tp.partition) for tp in partitions)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.held.difference_update((tp.topic, tp.partition) for tp in partitions)

    def seek(self, partition: TopicPartition) -> None:
        """Fetch the partition from `partition.offset` next."""
        if (partition.topic, partition.partition) in self.positions:
            self.positions[partition.topic, partition.partition] = partition.offset

    def take(self, n: int, timeout: float) -> list[Fetched]:  # noqa: ARG002 (a consumer's call)
        """The partitions of the first fetch answered within `timeout` whose positions still
        are those it asked for (and every other answer already come)."""
        self.fetch_ahead()
        if not self.asked:
            time.sleep(min(timeout, RETRY_S))
            return []
        nodes = {self.connections[node]: node for node in self.asked}
        found: list[Fetched] = []
        for connection in kafka_wire.ready(list(nodes), timeout):
            found += self._answer(nodes[connection])
        return found

    def advance(self, tp: TP, offset: int) -> None:
        """Where the partition's next fetch starts (past what was just taken of it)."""
        if tp in self.positions and offset > self.positions[tp]:
            self.positions[tp] = offset

    def fetch_ahead(self) -> None:
        """Ask each source broker without a fetch in flight for its partitions' next
        batches."""
        if self.stale and time.monotonic() >= self.retry_at:
            self._refresh()
        wanted: dict[int, dict[TP, int]] = defaultdict(dict)
        for tp, offset in self.positions.items():
            node = self.leaders.get(tp, -1)
            if node >= 0 and node not in self.asked and tp not in self.held:
                wanted[node][tp] = offset
        for node, positions in wanted.items():
            try:
                connection = self._connection(node)
                request = kafka_wire.fetch_request(positions, WAIT_MS, PER_PARTITION, PER_FETCH)
                connection.send(request, kafka_wire.FETCH_RESPONSE, kafka_wire.FETCH_VERSION)
                self.asked[node] = positions
            except WireError as exc:
                self._lost(node, str(exc))

    def awaited(self) -> list[Connection]:
        """The connections a fetch's answer is awaited on."""
        return [self.connections[node] for node in self.asked]

    def wake(self) -> None:
        pass  # a fetch waits WAIT_MS at most: the copier's loop comes round soon

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
        self.asked.clear()

    # --- inside -------------------------------------------------------------------------------

    def _answer(self, node: int) -> list[Fetched]:
        asked = self.asked.pop(node)
        try:
            _, _, body = self.connections[node].receive_raw()
            parts = list(kafka_wire.fetched(body))
        except WireError as exc:
            self._lost(node, str(exc))
            return []
        found = []
        for part in parts:
            tp = (part.topic, part.partition)
            if tp not in asked or self.positions.get(tp) != asked[tp]:
                continue  # unassigned, or assigned again elsewhere, since it was asked
            if part.error == 0:
                found.append(part)
                self.bytes += part.records.nbytes
            else:
                self._partition_error(tp, part)
        if found:
            self.error = ""
        return found

    def _partition_error(self, tp: TP, part: Fetched) -> None:
        name = kafka_wire.error_name(part.error)
        if part.error == 1:  # OFFSET_OUT_OF_RANGE: retention took what it was to read
            self._to_log_start(tp)
        elif part.error in kafka_wire.RETRIABLE or part.error == 3:
            self.leaders[tp] = -1
            self.stale = True
            self.error = f"reading {tp[0]}[{tp[1]}]: {name}"
        else:
            raise KafkaException(
                KafkaError(KafkaError._FAIL, f"reading {tp[0]}[{tp[1]}] failed: {name}")
            )

    def _to_log_start(self, tp: TP) -> None:
        node = self.leaders.get(tp, -1)
        try:
            found = kafka_wire.list_offsets(self._connection(node), [tp], -2)
        except (WireError, KeyError) as exc:
            self._lost(node, str(exc))
            return
        start, code = found.get(tp, (-1, 3))
        if code == 0 and tp in self.positions and start > self.positions[tp]:
            log.warning(
                "%s[%d]: offsets %d to %d are gone from the source (retention); going on from %d",
                tp[0],
                tp[1],
                self.positions[tp],
                start - 1,
                start,
            )
            self.positions[tp] = start
        elif code:
            self.leaders[tp], self.stale = -1, True

    def _refresh(self) -> None:
        topics = sorted({topic for topic, _ in self.positions})
        if not topics:
            self.stale = False
            return
        for address in self._addresses():
            try:
                connection = Connection(address, self.settings, TIMEOUT_S)
                try:
                    found = kafka_wire.metadata(connection, topics)
                finally:
                    connection.close()
            except WireError as exc:
                self.error = f"the source's metadata: {exc}"
                continue
            moved = {n for n, a in self.brokers.items() if found.brokers.get(n) != a}
            for node in moved:
                self._drop(node)
            self.brokers = found.brokers
            self.leaders = {tp: found.leaders.get(tp, -1) for tp in self.positions}
            missing = [tp for tp, node in self.leaders.items() if node < 0]
            self.stale = bool(missing)
            if missing:
                first = missing[0]
                why = kafka_wire.error_name(found.errors.get(first[0], 5))
                self.error = f"reading {first[0]}[{first[1]}]: no leader ({why})"
            self.retry_at = time.monotonic() + RETRY_S
            return
        self.retry_at = time.monotonic() + RETRY_S * 5

    def _addresses(self) -> list[str]:
        """The brokers to ask for metadata: those known, then the bootstrap servers."""
        return [*self.brokers.values(), *self.settings.bootstrap]

    def _connection(self, node: int) -> Connection:
        connection = self.connections.get(node)
        if connection is None:
            connection = Connection(self.brokers[node], self.settings, TIMEOUT_S)
            connection.sock.settimeout(TIMEOUT_S)
            self.connections[node] = connection
        return connection

    def _lost(self, node: int, why: str) -> None:
        self.error = f"reading from the source: {why}"
        log.warning("Source broker %s: %s", node, why)
        self._drop(node)
        for tp, leader in self.leaders.items():
            if leader == node:
                self.leaders[tp] = -1
        self.stale = True
        self.retry_at = time.monotonic() + RETRY_S

    def _drop(self, node: int) -> None:
        connection = self.connections.pop(node, None)
        if connection is not None:
            connection.close()
        self.asked.pop(node, None)
