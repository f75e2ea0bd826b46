"""The Kafka clients a mirror copier uses, and how it gets them: each made from a config dict by
a factory the copier is given. By default confluent-kafka's producer, and the slot's shared
consumers (`source_readers`) and admin clients; the unit tests give in-memory fakes
(tests/unit/fake_copier_clients.py), so the exactly-once rules are tested without Kafka. Only
the calls a copier makes are named here: a fake need answer nothing else."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import ClusterMetadata

from infra.consuming import Consumed
from infra.kafka_topics import PartitionReplicas

# A producer from its settings (callbacks among them, hence Any).
ProducerFactory = Callable[[dict[str, Any]], Producer]


class Source(Protocol):
    """A copier's consumer of its link's source: a `source_readers.View` in the engine."""

    def take(self, n: int, timeout: float) -> list[Consumed]: ...
    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...
    def incremental_unassign(self, partitions: list[TopicPartition]) -> None: ...
    def pause(self, partitions: list[TopicPartition]) -> None: ...
    def resume(self, partitions: list[TopicPartition]) -> None: ...
    def seek(self, partition: TopicPartition) -> None: ...
    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]: ...
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata: ...
    def wake(self) -> None: ...
    def close(self) -> None: ...


SourceFactory = Callable[[dict[str, str]], Source]


class DestinationAdmin(Protocol):
    """What a copier asks the destination's admin client (`infra.kafka_admin.KafkaAdmin`)."""

    def offsets(
        self, partitions: Iterable[tuple[str, int]], at: str | int = "latest"
    ) -> dict[tuple[str, int], int]: ...
    def partition_replicas(self, topic: str) -> list[PartitionReplicas]: ...
    def broker_configs(self, names: list[str]) -> dict[str, str | None]: ...


AdminFactory = Callable[[dict[str, str]], DestinationAdmin]
