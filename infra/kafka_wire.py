"""Kafka's own protocol on a socket of our own, for what a client library cannot do: fetch record
batches and produce them as they are (the engine's batch path). A `Connection` to one broker
speaks SASL (PLAIN, SCRAM-SHA-256/512) as the settings say (librdkafka's names, as every
client of ours is configured); requests are pipelined and answered in order.

The small requests (metadata, producer ids, offsets, SASL) are kafka-python's protocol messages;
a Fetch response is read where it lies (`fetched`), and a Produce request is written around the
batches where they lie (`produce_parts`), so that no batch is copied in the process.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka.net.sasl.scram import ScramClient
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

CLIENT_ID = b"isthmus-engine"
IOV_MAX = 1024  # the most buffers one sendmsg takes (Linux's UIO_MAXIOV)
REUSED_FROM = 1 << 20  # answers this big or bigger are read into buffers used again
BUFFERS = 4  # kept by a connection for that
FETCH_VERSION, PRODUCE_VERSION, INIT_PID_VERSION = 12, 9, 4  # topics by name
METADATA_VERSION, LIST_OFFSETS_VERSION = 9, 6
# Errors a client waits out and asks again: the partition moved or its leader is being chosen,
# a broker is loading, too few replicas are in sync, a request timed out.
RETRIABLE = {5, 6, 7, 13, 14, 15, 19, 20, 74, 75}
ERRORS = {
    1: "OFFSET_OUT_OF_RANGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    10: "MESSAGE_TOO_LARGE",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    29: "TOPIC_AUTHORIZATION_FAILED",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    58: "SASL_AUTHENTICATION_FAILED",
    59: "UNKNOWN_PRODUCER_ID",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    87: "INVALID_RECORD",
}


def error_name(code: int) -> str:
    return ERRORS.get(code, f"error {code}")


class WireError(ConnectionError):
    """A broker could not be reached, refused us, or broke the connection: the connection is
    closed; a new one may do better."""


@dataclass(frozen=True)
class Settings:
    """How to reach a cluster's brokers: from a client config with librdkafka's names."""

    bootstrap: tuple[str, ...]
    protocol: str
    mechanism: str
    username: str
    password: str

    @classmethod
    def of(cls, config: dict[str, str]) -> Settings:
        protocol = config.get("security.protocol", "PLAINTEXT").upper()
        return cls(
            tuple(a.strip() for a in config["bootstrap.servers"].split(",") if a.strip()),
            protocol,
            config.get("sasl.mechanism", config.get("sasl.mechanisms", "PLAIN")).upper(),
            config.get("sasl.username", ""),
            config.get("sasl.password", ""),
        )

    @staticmethod
    def unsupported(config: dict[str, str]) -> str:
        """Why these settings cannot be spoken here ("" if they can)."""
        protocol = config.get("security.protocol", "PLAINTEXT").upper()
        mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms", "PLAIN")).upper()
        if protocol.endswith("SSL"):
            return "TLS (so far it is proven over PLAINTEXT and SASL_PLAINTEXT only)"
        if protocol.startswith("SASL") and mechanism not in ("PLAIN", *ScramClient.MECHANISMS):
            return f"SASL mechanism {mechanism}"
        return ""


class Connection:
    """One socket to a broker, requests pipelined and answered in order. Each response is read
    into a buffer of its own, so what a caller keeps of one stays valid."""

    def __init__(self, address: str, settings: Settings, timeout: float = 10.0):
        self.address = address
        host, port = address.rsplit(":", 1)
        try:
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        except OSError as exc:
            raise WireError(f"cannot connect to {address}: {exc.strerror or exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock: socket.socket = sock
        self.next_id = 0
        self.waiting: deque[tuple[int, Any, int]] = deque()
        self.buffers: list[bytearray] = []  # see `_buffer`
        if settings.protocol.startswith("SASL"):
            try:
                self._authenticate(settings)
            except BaseException:
                self.close()
                raise

    # --- sending and receiving ------------------------------------------------------------

    def send(self, request: Any, response_class: Any, version: int) -> None:
        request.with_header(correlation_id=self.next_id, client_id=CLIENT_ID.decode())
        self._send_all([memoryview(request.encode(version=version, header=True, framed=True))])
        self.waiting.append((self.next_id, response_class, version))
        self.next_id += 1

    def send_parts(self, parts: list[Any], response_class: Any, version: int) -> None:
        """A request already encoded, in parts (the records among them as they lie in a
        fetch's buffer), sent without joining them."""
        views = [memoryview(part).cast("B") for part in parts]
        views.insert(0, memoryview(struct.pack(">i", sum(v.nbytes for v in views))))
        self._send_all(views)
        self.waiting.append((self.next_id, response_class, version))
        self.next_id += 1

    def receive(self) -> Any:
        """The next response, decoded."""
        response_class, version, body = self.receive_raw()
        return response_class.decode(body, version=version)

    def receive_raw(self) -> tuple[Any, int, memoryview]:
        """The next response's class, version and body, in a buffer of its own."""
        correlation, response_class, version = self.waiting.popleft()
        size = int.from_bytes(self._exactly(4), "big")
        payload = self._exactly(size)
        if int.from_bytes(payload[:4], "big") != correlation:
            self.close()
            raise WireError(f"{self.address} answered out of order")
        start = 5 if response_class.flexible_version_q(version) else 4  # no tagged fields
        return response_class, version, payload[start:]

    def call(self, request: Any, response_class: Any, version: int) -> Any:
        self.send(request, response_class, version)
        return self.receive()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _send_all(self, views: list[memoryview]) -> None:
        try:
            while views:
                sent = self.sock.sendmsg(views[:IOV_MAX])
                while sent:
                    if sent >= views[0].nbytes:
                        sent -= views.pop(0).nbytes
                    else:
                        views[0], sent = views[0][sent:], 0
        except OSError as exc:
            self.close()
            raise WireError(f"sending to {self.address} failed: {exc}") from None

    def _exactly(self, n: int) -> memoryview:
        buffer = memoryview(self._buffer(n))[:n]
        got = 0
        try:
            while got < n:
                read = self.sock.recv_into(buffer[got:])
                if not read:
                    raise WireError(f"{self.address} closed the connection")
                got += read
        except OSError as exc:
            self.close()
            if isinstance(exc, WireError):
                raise
            raise WireError(f"reading from {self.address} failed: {exc}") from None
        return buffer

    def _buffer(self, n: int) -> bytearray:
        """A buffer of at least `n` bytes that nothing still reads: one of the last few this
        connection read into, once every view of it is gone (its batches written and
        answered), else a new one. Reusing them spares the kernel zeroing fresh pages for
        every fetch (a third of the batch path's CPU, measured)."""
        if n < REUSED_FROM:
            return bytearray(n)
        for buffer in self.buffers:
            if len(buffer) >= n and _unviewed(buffer):
                return buffer
        buffer = bytearray(max(n, REUSED_FROM))
        self.buffers = [b for b in self.buffers if _unviewed(b)][-(BUFFERS - 1) :] + [buffer]
        return buffer

    # --- SASL ---------------------------------------------------------------------------------

    def _authenticate(self, settings: Settings) -> None:
        mechanism = settings.mechanism
        shake = self.call(SaslHandshakeRequest(mechanism=mechanism), SaslHandshakeResponse, 1)
        if shake.error_code:
            raise WireError(
                f"{self.address} does not take SASL {mechanism} (it takes "
                f"{', '.join(shake.mechanisms) or 'none'})"
            )
        if mechanism == "PLAIN":
            user, password = settings.username.encode(), settings.password.encode()
            self._exchange(b"\0" + user + b"\0" + password)
            return
        scram = ScramClient(settings.username, settings.password, mechanism)
        first = self._exchange(scram.first_message())
        try:
            scram.process_server_first_message(first)
            scram.process_server_final_message(self._exchange(scram.final_message()))
        except ValueError as exc:
            raise WireError(f"SASL {mechanism} with {self.address} failed: {exc}") from None

    def _exchange(self, token: bytes) -> bytes:
        answer = self.call(SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse, 2)
        if answer.error_code:
            raise WireError(
                f"{self.address} refused the credentials: {answer.error_message or 'no reason'}"
            )
        return bytes(answer.auth_bytes)


def _unviewed(buffer: bytearray) -> bool:
    """Whether no view of the buffer is alive (a bytearray with one cannot change size)."""
    try:
        buffer.append(0)
    except BufferError:
        return False
    buffer.pop()
    return True


def ready(connections: list[Connection], timeout: float) -> list[Connection]:
    """The connections with an answer to read, waiting up to `timeout` for one."""
    by_socket = {c.sock: c for c in connections}
    try:
        readable, _, _ = select.select(list(by_socket), [], [], timeout)
    except (OSError, ValueError):  # a socket closed under it: its receive says so
        return connections
    return [by_socket[s] for s in readable]


# --- requests -------------------------------------------------------------------------------


@dataclass
class Metadata:
    brokers: dict[int, str]  # node id: host:port
    leaders: dict[tuple[str, int], int]  # (topic, partition): the leader's node id, -1 if none
    errors: dict[str, int]  # topic: its error code


def metadata(connection: Connection, topics: list[str]) -> Metadata:
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=False,
    )
    answer = connection.call(request, MetadataResponse, METADATA_VERSION)
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in answer.brokers}
    leaders, errors = {}, {}
    for topic in answer.topics:
        if topic.error_code:
            errors[topic.name] = topic.error_code
        for p in topic.partitions:
            leaders[topic.name, p.partition_index] = p.leader_id if not p.error_code else -1
    return Metadata(brokers, leaders, errors)


def init_producer_id(connection: Connection, deadline_s: float = 30.0) -> tuple[int, int]:
    """A new idempotent producer's id and epoch, asked again while the broker's coordinator is
    loading or not available yet, as Kafka's clients do."""
    deadline = time.monotonic() + deadline_s
    while True:
        request = InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        )
        got = connection.call(request, InitProducerIdResponse, INIT_PID_VERSION)
        if got.error_code == 0:
            return got.producer_id, got.producer_epoch
        if got.error_code not in RETRIABLE or time.monotonic() > deadline:
            raise WireError(
                f"{connection.address} gave no producer id: {error_name(got.error_code)}"
            )
        time.sleep(0.5)


def list_offsets(
    connection: Connection, partitions: list[tuple[str, int]], timestamp: int
) -> dict[tuple[str, int], tuple[int, int]]:
    """Each partition's offset at `timestamp` (-2 its log start, -1 its end), and the error
    code, from its leader."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=p, current_leader_epoch=-1, timestamp=timestamp
                    )
                    for p in ps
                ],
            )
            for topic, ps in by_topic.items()
        ],
    )
    answer = connection.call(request, ListOffsetsResponse, LIST_OFFSETS_VERSION)
    return {
        (t.name, p.partition_index): (p.offset, p.error_code)
        for t in answer.topics
        for p in t.partitions
    }


def fetch_request(
    positions: dict[tuple[str, int], int], wait_ms: int, per_partition: int, max_bytes: int
) -> Any:
    """A `read_committed` Fetch (no session: every partition every time)."""
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in positions.items():
        by_topic.setdefault(topic, []).append(
            FetchRequest.FetchTopic.FetchPartition(
                partition=partition,
                current_leader_epoch=-1,
                fetch_offset=offset,
                last_fetched_epoch=-1,
                log_start_offset=-1,
                partition_max_bytes=per_partition,
            )
        )
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=wait_ms,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        forgotten_topics_data=[],
        rack_id="",
    )


@dataclass(slots=True)
class Fetched:
    """One partition of a Fetch response, its records where they lie."""

    topic: str
    partition: int
    error: int
    high_watermark: int
    last_stable: int
    log_start: int
    aborted: list[tuple[int, int]]  # producer id, first offset
    records: memoryview


def fetched(body: memoryview) -> Iterator[Fetched]:
    """A Fetch v12 response's partitions, read where they lie. A request-level error raises
    WireError."""
    error = struct.unpack_from(">h", body, 4)[0]
    if error:
        raise WireError(f"the fetch failed: {error_name(error)}")
    topics, pos = uvarint(body, 10)  # past throttle time, error code, session id
    for _ in range(topics - 1):
        size, pos = uvarint(body, pos)
        topic = bytes(body[pos : pos + size - 1]).decode()
        pos += size - 1
        partitions, pos = uvarint(body, pos)
        for _ in range(partitions - 1):
            partition, code, high, stable, start = struct.unpack_from(">ihqqq", body, pos)
            pos += 30
            count, pos = uvarint(body, pos)
            aborted = []
            for _ in range(max(count - 1, 0)):
                aborted.append(struct.unpack_from(">qq", body, pos))
                pos = _tags(body, pos + 16)
            size, pos = uvarint(body, pos + 4)  # past the preferred read replica
            records = body[pos : pos + max(size - 1, 0)]
            pos = _tags(body, pos + max(size - 1, 0))
            yield Fetched(topic, partition, code, high, stable, start, aborted, records)
        pos = _tags(body, pos)


def produce_parts(
    correlation: int, batches: list[tuple[str, int, memoryview]], timeout_ms: int
) -> list[Any]:
    """A Produce v9 request (acks all, no transactional id) of one batch per partition,
    encoded around the batches where they lie: its parts, to send as they are."""
    by_topic: dict[str, list[tuple[int, memoryview]]] = {}
    for topic, partition, batch in batches:
        by_topic.setdefault(topic, []).append((partition, batch))
    parts: list[Any] = [
        struct.pack(">hhih", 0, PRODUCE_VERSION, correlation, len(CLIENT_ID))
        + CLIENT_ID
        + b"\x00"  # the header's tagged fields
        + b"\x00"  # no transactional id
        + struct.pack(">hi", -1, timeout_ms)
        + _encode_uvarint(len(by_topic) + 1)
    ]
    for topic, records in by_topic.items():
        name = topic.encode()
        head = _encode_uvarint(len(name) + 1) + name + _encode_uvarint(len(records) + 1)
        parts.append(head)
        for partition, batch in records:
            parts += [struct.pack(">i", partition) + _encode_uvarint(batch.nbytes + 1), batch]
            parts.append(b"\x00")  # the partition's tagged fields
        parts.append(b"\x00")  # the topic's
    parts.append(b"\x00")  # the request's
    return parts


def produced(answer: Any) -> Iterator[tuple[str, int, int, int, str]]:
    """(topic, partition, error code, base offset, error message) of a Produce response."""
    for topic in answer.responses:
        for p in topic.partition_responses:
            yield topic.name, p.index, p.error_code, p.base_offset, p.error_message or ""


PRODUCE_RESPONSE = ProduceResponse
FETCH_RESPONSE = FetchResponse


def uvarint(view: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _tags(view: memoryview, pos: int) -> int:
    """Past a flexible message's tagged fields."""
    count, pos = uvarint(view, pos)
    for _ in range(count):
        _, pos = uvarint(view, pos)
        size, pos = uvarint(view, pos)
        pos += size
    return pos


def _encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
