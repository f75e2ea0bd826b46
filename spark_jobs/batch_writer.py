"""The batch path's writes: record batches produced to their mirror partitions as they were
fetched, but for what the destination must own (`infra.record_batches.rewrite`: the producer id,
epoch and base sequence of this writer's idempotent producer, and the CRC), under the same
exactly-once rules as the record path (`mirror_writer`, whose translation entries, settling and
end offsets it shares):

- every batch's answer says the offset its first record landed at, and it must be the one its
  cursor expected: anything else means another writer, and the copier stops (stronger than the
  record path's check of the first records after a start);
- nothing is sent once the copier may not write (stopped, its slot's epoch ended, the control
  channel silent);
- a batch the destination did not take for a reason that passes (its partition's leader moved,
  too few replicas in sync, a broken connection) is sent again with the same sequence, after
  every batch of its partition still in flight is answered: the destination keeps the last
  five sequences of each producer and partition, so a batch it had taken already is answered
  with the offset it got then, and none is written twice;
- one batch of a partition per produce request (Kafka takes no more), at most five of a
  partition in flight, as an idempotent producer may.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Producer

from infra import kafka_wire, record_batches
from infra.kafka_wire import Connection, Settings, WireError
from infra.record_batches import Record

from .copier_clients import DestinationAdmin, ProducerFactory
from .cursors import Cursor
from .mirror_writer import CONTACT_S, DRAIN_S, Copier, Fenced, MirrorWriter

log = logging.getLogger("spark_jobs.copier")

TP = tuple[str, int]
IN_FLIGHT = 5  # batches of a partition sent and not yet answered (idempotence keeps five)
REQUEST_BYTES = 16 << 20  # a produce request's batches, at most (unless one alone is more)
BACKLOG_BYTES = 128 << 20  # batches not yet answered beyond which the copier fetches no more
DELIVERY_S = 120.0  # the longest a batch is sent again before the copier gives up
RETRY_S = 0.1  # the pause before a refused partition's batches are sent again
TIMEOUT_MS = 30_000  # the destination's wait for its replicas (acks all)
SEQUENCES = 2**31  # a producer's sequence wraps to 0 past Int32's largest


@dataclass(eq=False)
class Out:
    """A batch to write: as fetched (`view`, rewritten where it lies), or its records to build
    again (`records`, a batch Kafka takes from no client as it is)."""

    cursor: Cursor
    count: int  # its records
    offset: int  # the destination offset its first record must land at
    view: memoryview | None = None
    records: list[Record] = field(default_factory=list)
    codec: int = 0


@dataclass(eq=False)
class Pending:
    topic: str
    partition: int
    batch: memoryview
    count: int
    offset: int


@dataclass
class Partition:
    sequence: int = 0
    unsent: deque[Pending] = field(default_factory=deque)
    unacked: deque[Pending] = field(default_factory=deque)
    in_flight: int = 0
    failing_since: float = 0.0  # when a batch of it was first refused for a passing reason
    why: str = ""  # why the last was refused: its batches wait to be sent again
    retry_at: float = 0.0


class BatchWriter(MirrorWriter):
    """One copier's batches, produced to each mirror partition's leader."""

    def __init__(
        self,
        destination: dict[str, str],
        copier: Copier,
        admin: Callable[[], DestinationAdmin],
        producers: ProducerFactory = Producer,
    ):
        super().__init__(destination, copier, admin, producers)  # its translation entries
        self.settings = Settings.of(self.destination)
        self.producer_id = self.epoch = -1
        self.parts: dict[TP, Partition] = {}
        self.brokers: dict[int, str] = {}
        self.leaders: dict[TP, int] = {}
        self.connections: dict[int, Connection] = {}
        self.requests: dict[int, deque[dict[TP, Pending]]] = {}  # in flight, by connection
        self.stale = True
        self.retry_at = 0.0  # when the metadata may be asked again, after a failed ask
        self.quiet_until = 0.0  # no word of a refused batch before then

    # --- what the copier calls ----------------------------------------------------------------

    def write(self, chosen: list[Out]) -> None:  # type: ignore[override]
        """Queue each batch for its mirror partition, as this writer's producer writes it, and
        send what may be sent."""
        if not chosen:
            return
        self.warm_up()
        for out in chosen:
            tp = (out.cursor.mirror, out.cursor.partition)
            part = self.parts.setdefault(tp, Partition())
            if out.view is not None:
                batch = out.view
                record_batches.rewrite(batch, self.producer_id, self.epoch, part.sequence)
            else:
                built = record_batches.build(
                    out.records, out.codec, self.producer_id, self.epoch, part.sequence
                )
                batch = memoryview(built)
            part.sequence = (part.sequence + out.count) % SEQUENCES
            part.unsent.append(Pending(tp[0], tp[1], batch, out.count, out.offset))
            if tp not in self.leaders:
                self.stale = True
        self.pump()
        self.counters.last_write_ms = int(time.time() * 1000)

    def check_deliveries(self) -> None:
        """Take the answers come so far, and send what may be sent."""
        self.pump()

    def drain(self, timeout: float = DRAIN_S) -> None:
        """Wait until every batch is answered; give up (and stop writing) when that takes too
        long or the control channel goes quiet meanwhile."""
        deadline = time.monotonic() + timeout
        while any(p.unsent or p.unacked for p in self.parts.values()):
            self.copier.keep_reporting()
            if not self.copier.in_touch():
                raise Fenced("the control channel went quiet while records were in flight")
            if time.monotonic() > deadline:
                raise Fenced(f"records were still undelivered after {timeout:.0f} s")
            self.pump(wait=0.2, draining=True)

    def discard(self) -> None:
        """Stop writing: drop what is queued, close the connections (an answer still to come
        is not waited for: the partitions start again from the destination, after it
        settled), and give up the producer id."""
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
        self.requests.clear()
        self.parts.clear()
        self.producer_id = self.epoch = -1

    def full(self) -> bool:
        """Whether the batches not yet answered hold so much that no more should be fetched
        until some are (as the record path's producer queue bounds it)."""
        held = 0
        for part in self.parts.values():
            held += sum(p.batch.nbytes for p in part.unsent) + sum(
                p.batch.nbytes for p in part.unacked
            )
            if held > BACKLOG_BYTES:
                return True
        return False

    def awaited(self) -> list[Connection]:
        """The connections an answer is awaited on."""
        return [self.connections[node] for node, sent in self.requests.items() if sent]

    def queued(self) -> int:
        return sum(len(p.unsent) + len(p.unacked) for p in self.parts.values())

    def warm_up(self) -> None:
        """The producer id, got now: a new one takes a while on a busy destination."""
        if self.producer_id >= 0:
            return
        for address in self._addresses():
            try:
                connection = Connection(address, self.settings)
                try:
                    self.producer_id, self.epoch = kafka_wire.init_producer_id(connection)
                finally:
                    connection.close()
                return
            except WireError as exc:
                why = str(exc)
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, f"the destination: {why}"))

    def verify(self, started: set[Cursor]) -> None:
        """Every batch's answer is checked (`_answered`); nothing more to do."""

    # --- sending ------------------------------------------------------------------------------

    def pump(self, wait: float = 0.0, draining: bool = False) -> None:
        """Take the answers that came, put back what must be sent again, send what may be sent
        (`draining`: what is queued, though the copier was stopped), then wait up to `wait`
        for the next answer."""
        self._receive(0)
        self._retry()
        if self.stale and time.monotonic() >= self.retry_at:
            self._refresh()
        by_node: dict[int, list[Partition]] = {}
        for tp, part in self.parts.items():
            if part.unsent and part.in_flight < IN_FLIGHT and not part.why:
                node = self.leaders.get(tp, -1)
                if node >= 0:
                    by_node.setdefault(node, []).append(part)
        for node, parts in by_node.items():
            self._send(node, parts, draining)
        if wait:
            self._receive(wait)

    def _send(self, node: int, parts: list[Partition], draining: bool) -> None:
        """Produce requests to `node`, one batch of each partition in each, until each
        partition has IN_FLIGHT in flight or nothing left."""
        while parts:
            copier = self.copier
            if copier.ending and not draining:
                raise Fenced("the copier was stopped")
            if not copier.in_touch():
                raise Fenced(f"the control channel has not answered for {CONTACT_S:.0f} s")
            request: dict[TP, Pending] = {}
            size = 0
            for part in parts:
                if size and size + part.unsent[0].batch.nbytes > REQUEST_BYTES:
                    break
                pending = part.unsent.popleft()
                part.unacked.append(pending)
                part.in_flight += 1
                request[pending.topic, pending.partition] = pending
                size += pending.batch.nbytes
            try:
                connection = self._connection(node)
                body = [(p.topic, p.partition, p.batch) for p in request.values()]
                parts_ = kafka_wire.produce_parts(connection.next_id, body, TIMEOUT_MS)
                connection.send_parts(
                    parts_, kafka_wire.PRODUCE_RESPONSE, kafka_wire.PRODUCE_VERSION
                )
            except (WireError, KeyError) as exc:
                self._failed(request, f"sending to the destination: {exc}")
                self._lost(node)
                return
            self.requests.setdefault(node, deque()).append(request)
            parts = [p for p in parts if p.unsent and p.in_flight < IN_FLIGHT]

    # --- answers -----------------------------------------------------------------------------

    def _receive(self, wait: float) -> None:
        """Every answer already come, and if none has, the first within `wait` (nothing awaited:
        `wait` passes, for a leader to be found)."""
        waiting = {node: q for node, q in self.requests.items() if q}
        if not waiting:
            time.sleep(wait)
            return
        nodes = {self.connections[node]: node for node in waiting}
        for connection in kafka_wire.ready(list(nodes), wait):
            node = nodes[connection]
            while self.requests.get(node):
                self._answer(node)
                if self.connections.get(node) is not connection:
                    break  # lost meanwhile
                if not kafka_wire.ready([connection], 0):
                    break

    def _answer(self, node: int) -> None:
        request = self.requests[node].popleft()
        try:
            answer = self.connections[node].receive()
        except WireError as exc:
            self._failed(request, f"the destination: {exc}")
            self._lost(node)
            return
        for topic, partition, error, base, message in kafka_wire.produced(answer):
            pending = request.pop((topic, partition), None)
            if pending is None:
                continue
            part = self.parts.get((topic, partition))
            if part is None:
                continue  # discarded meanwhile
            part.in_flight -= 1
            if error == 0:
                self._answered(part, pending, base)
            elif error == 45 and not part.why and part.unacked and part.unacked[0] is pending:
                # Out of order though every batch before it was taken: the destination holds
                # no state of this producer for the partition (a mirror made again, say).
                raise KafkaException(
                    KafkaError(
                        KafkaError._FAIL,
                        f"writing {topic}[{partition}]: the destination lost this producer's "
                        "sequence; starting again with a new producer",
                    )
                )
            elif error in kafka_wire.RETRIABLE or error in (3, 45):  # 3: a topic just made
                self._refused(part, f"{kafka_wire.error_name(error)} {message}".strip())
                self.leaders.pop((topic, partition), None)
                self.stale = True
            else:
                raise KafkaException(
                    KafkaError(
                        KafkaError._FAIL,
                        f"writing {topic}[{partition}] failed: "
                        f"{kafka_wire.error_name(error)} {message}".strip(),
                    )
                )
        if request:  # partitions the answer did not name
            self._failed(request, "the destination's answer left some partitions out")

    def _answered(self, part: Partition, pending: Pending, base: int) -> None:
        # Taken: not sent again (a batch refused before it, after it was appended but before
        # its replicas had it, is sent again and answered as the duplicate it is).
        part.unacked.remove(pending)
        if base != pending.offset:
            raise Fenced(
                f"{pending.topic}[{pending.partition}] took a batch at offset {base}, not "
                f"{pending.offset}: something else writes this mirror partition"
            )
        self.counters.records += pending.count
        self.counters.bytes += pending.batch.nbytes
        if not part.why:
            part.failing_since = 0.0

    def _refused(self, part: Partition, why: str) -> None:
        now = time.monotonic()
        if not part.failing_since:
            part.failing_since = now
            if now >= self.quiet_until:  # once a second at most: a broker leads thousands
                self.quiet_until = now + 1.0
                log.info(
                    "Link %s, slot %d: the destination did not take a batch (%s); it is sent again",
                    self.copier.link_id,
                    self.copier.number,
                    why,
                )
        part.why = why
        # Sent again after a pause: a dead leader stays in the metadata until it is fenced.
        part.retry_at = now + RETRY_S
        if now - part.failing_since > DELIVERY_S:
            raise KafkaException(
                KafkaError(
                    KafkaError._TIMED_OUT,
                    f"records not written for {DELIVERY_S:.0f} s: {why}",
                )
            )

    def _failed(self, request: dict[TP, Pending], why: str) -> None:
        for tp in request:
            part = self.parts.get(tp)
            if part is not None:
                part.in_flight -= 1
                self._refused(part, why)

    def _retry(self) -> None:
        """A refused partition's batches still unanswered go back to be sent again, in order,
        once none of them is in flight and its pause is over."""
        now = time.monotonic()
        for part in self.parts.values():
            if part.why and part.in_flight <= 0 and now >= part.retry_at:
                part.unsent.extendleft(reversed(part.unacked))
                part.unacked.clear()
                part.in_flight, part.why = 0, ""
                self.stale = True

    # --- where to write -----------------------------------------------------------------------

    def _refresh(self) -> None:
        topics = sorted({topic for topic, _ in self.parts})
        for address in self._addresses():
            try:
                connection = Connection(address, self.settings)
                try:
                    found = kafka_wire.metadata(connection, topics)
                finally:
                    connection.close()
            except WireError:
                continue
            for node, where in list(self.brokers.items()):
                if found.brokers.get(node) != where:
                    self._lost(node)
            self.brokers = found.brokers
            self.leaders = {tp: n for tp, n in found.leaders.items() if n >= 0}
            self.stale = any(tp not in self.leaders for tp in self.parts)
            self.retry_at = time.monotonic() + 0.2
            return
        self.retry_at = time.monotonic() + 1.0

    def _addresses(self) -> list[str]:
        return [*self.brokers.values(), *self.settings.bootstrap]

    def _connection(self, node: int) -> Connection:
        connection = self.connections.get(node)
        if connection is None:
            connection = self.connections[node] = Connection(self.brokers[node], self.settings)
            connection.sock.settimeout(TIMEOUT_MS / 1000 + 10)
        return connection

    def _lost(self, node: int) -> None:
        """A connection broke: what was in flight on it is refused (sent again later)."""
        connection = self.connections.pop(node, None)
        if connection is not None:
            connection.close()
        for request in self.requests.pop(node, deque()):
            self._failed(request, f"the connection to broker {node} broke")
        self.stale = True
