"""Partition offsets through the Kafka admin adapter: `OffsetCalls`, `KafkaAdmin`'s calls that
read where partitions start and end (or where a time falls), refusing the "no offset" a client
answers while a leader moves, and a topic's partitions with their replicas and log offsets.
Consumer groups' committed offsets are `kafka_groups`'s.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable

from confluent_kafka import KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import OffsetSpec

from .kafka_errors import AdminRequests, KafkaAdminError, TopicNotFound
from .kafka_topics import PartitionReplicas

OffsetsRequest = dict[TopicPartition, OffsetSpec]
# Where offsets are read at: one shared value each (confluent-kafka leaves these unannotated).
LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]


class OffsetCalls(AdminRequests):
    """`KafkaAdmin`'s calls on partition offsets."""

    def offsets(
        self, partitions: Iterable[tuple[str, int]], at: str | int = "latest"
    ) -> dict[tuple[str, int], int]:
        """Each (topic, partition)'s offset `at`: "latest" (the high watermark), "earliest"
        (the log start) or a time in ms (the first record at or after it, else -1)."""
        spec = {"latest": LATEST, "earliest": EARLIEST}.get(str(at))
        if spec is None:
            spec = OffsetSpec.for_timestamp(int(at))
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        exact = at in ("latest", "earliest")
        for _ in range(4):
            try:
                return self._read_offsets(request, exact)
            except KafkaAdminError as exc:
                # Partitions added since this client last read the metadata ("unknown
                # partition", "no leaders found", "not leader"): read it again and retry.
                if isinstance(exc, TopicNotFound) or not re.search(
                    "partition|leader", str(exc), re.IGNORECASE
                ):
                    raise
                time.sleep(0.2)
                for topic in {t for t, _ in partitions}:
                    with contextlib.suppress(KafkaException):
                        self._client.list_topics(topic=topic, timeout=self.timeout)
        return self._read_offsets(request, exact)

    def _read_offsets(self, request: OffsetsRequest, exact: bool) -> dict[tuple[str, int], int]:
        """The offsets asked for; with `exact` (an end or a start), a negative one is refused:
        while a partition's leader moves, the client may answer "no offset" (-1001) without
        an error, and taken for an offset it would place a copy or a comparison at -1001."""
        found, unread = self._offsets_read(request, exact)
        if unread:
            (topic, partition), why = min(unread.items())
            raise KafkaAdminError(f"Could not read the offsets of topic {topic!r}: {why}")
        return found

    def readable_offsets(
        self, partitions: Iterable[tuple[str, int]], at: str = "latest"
    ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
        """`offsets` of those partitions that have a leader to say now, in one request, and
        why each of the others has none yet ("not leader": a new topic's partitions get their
        leaders over a few seconds). The client's metadata is read again for the next try,
        also when a topic is not known yet: else its cached metadata goes on saying so."""
        spec = {"latest": LATEST, "earliest": EARLIEST}[at]
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}, {}
        try:
            found, unread = self._offsets_read(request, exact=True, partial=True)
        except TopicNotFound:
            self._read_metadata()
            raise
        if unread:
            self._read_metadata()
        return found, unread

    def _read_metadata(self) -> None:
        with contextlib.suppress(KafkaException):
            self._client.list_topics(timeout=self.timeout)

    def _offsets_read(
        self, request: OffsetsRequest, exact: bool, partial: bool = False
    ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
        futures = self._client.list_offsets(request, request_timeout=self.timeout)
        found, unread = {}, {}
        for tp, future in futures.items():
            where = (tp.topic, tp.partition)
            try:
                offset = self._wait(future, f"read the offsets of topic {tp.topic!r}").offset
            except TopicNotFound:
                raise
            except KafkaAdminError as exc:
                if not (partial and re.search("partition|leader", str(exc), re.IGNORECASE)):
                    raise
                unread[where] = str(exc)
                continue
            if exact and offset < 0:
                unread[where] = (
                    f"partition {tp.partition}'s leader gave none (it is moving); try again in "
                    "a moment."
                )
                continue
            found[where] = offset
        return found, unread

    def partition_replicas(self, topic: str) -> list[PartitionReplicas]:
        """Each partition's leader, replicas, in-sync replicas and log offsets."""
        futures = self._client.describe_topics(
            TopicCollection([topic]), request_timeout=self.timeout
        )
        partitions = self._wait(futures[topic], f"describe topic {topic!r}").partitions
        offsets = {}
        for name, spec in (("start", EARLIEST), ("end", LATEST)):
            request = {TopicPartition(topic, p.id): spec for p in partitions}
            for tp, future in self._client.list_offsets(
                request, request_timeout=self.timeout
            ).items():
                offsets[name, tp.partition] = self._wait(
                    future, f"read the offsets of topic {topic!r}"
                )
        return [
            PartitionReplicas(
                partition=p.id,
                leader=p.leader.id if p.leader else None,
                replicas=[r.id for r in p.replicas],
                isr=[r.id for r in p.isr],
                log_start_offset=offsets["start", p.id].offset,
                log_end_offset=offsets["end", p.id].offset,
                leader_epoch=offsets["end", p.id].leader_epoch,
            )
            for p in sorted(partitions, key=lambda p: p.id)
        ]
