"""A thin adapter over confluent-kafka's AdminClient that speaks in operator terms.

Every failure becomes a KafkaAdminError whose message says what went wrong and what to check.
`KafkaAdmin` is the one door: its calls are grouped by what they are about, each group in a
module of its own that it inherits (`kafka_topics` topics and configs, `kafka_offsets` partition
offsets, `kafka_acls` ACLs, `kafka_groups` consumer groups, `kafka_brokers` brokers), on
`kafka_errors`'s base that waits for a request and says its failure; `AdminCalls` are the calls
made of other calls, alike for this admin and the tests' in-memory one.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException

from .admin_client import AdminClient
from .kafka_acls import AclCalls
from .kafka_brokers import BrokerCalls
from .kafka_errors import InvalidClientConfig, KafkaAdminError
from .kafka_groups import GroupCalls, GroupDetail, GroupInfo
from .kafka_offsets import OffsetCalls
from .kafka_topics import ConfigValue, NewTopicSpec, TopicCalls

logger = logging.getLogger("librdkafka")


def kafka_uuid(value: uuid.UUID) -> str:
    """A UUID as Kafka prints its ids: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str
    broker_count: int
    controller_id: int | None


class AdminCalls:
    """The admin calls made of other calls, alike for every admin at the seam
    (`replication.kafka.connections`): this module's KafkaAdmin and the tests' in-memory one."""

    # What each admin answers itself.

    def topic_partition_counts(self) -> dict[str, int]:
        raise NotImplementedError

    def topics_configs(self, names: Iterable[str]) -> dict[str, dict[str, ConfigValue]]:
        raise NotImplementedError

    def create_topics(
        self, topics: list[NewTopicSpec], validate_only: bool = False
    ) -> dict[str, KafkaAdminError]:
        raise NotImplementedError

    def offsets(
        self, partitions: Iterable[tuple[str, int]], at: str | int = "latest"
    ) -> dict[tuple[str, int], int]:
        raise NotImplementedError

    def group_details(self, group_ids: Iterable[str]) -> dict[str, GroupDetail]:
        raise NotImplementedError

    # What they make of it.

    def list_topic_names(self) -> set[str]:
        return set(self.topic_partition_counts())

    def topic_configs(self, name: str) -> dict[str, ConfigValue]:
        return self.topics_configs([name])[name]

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int | None,
        configs: dict[str, str],
        validate_only: bool = False,
    ) -> None:
        spec = NewTopicSpec(name, partitions, replication_factor, configs)
        failed = self.create_topics([spec], validate_only)
        if name in failed:
            raise failed[name]

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        """The log end offset (high watermark) of each partition."""
        found = self.offsets([(topic, p) for p in range(partitions)])
        return {p: offset for (_, p), offset in found.items()}

    def start_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        """The log start offset of each partition."""
        found = self.offsets([(topic, p) for p in range(partitions)], "earliest")
        return {p: offset for (_, p), offset in found.items()}

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupInfo]:
        """Each group's state and member count, all in one call; a group the coordinator
        does not know is Dead with no members."""
        return {
            g.group_id: GroupInfo(g.group_id, g.state, len(g.members))
            for g in self.group_details(group_ids).values()
        }


class KafkaAdmin(TopicCalls, OffsetCalls, AclCalls, GroupCalls, BrokerCalls, AdminCalls):
    def __init__(self, config: dict[str, str], timeout: float = 5.0):
        self.bootstrap = config.get("bootstrap.servers", "?")
        self.timeout = timeout
        # The client's own errors (a failed login, a broker gone), the newest kept.
        self._client_errors: deque[KafkaError] = deque(maxlen=50)
        self.failed = False  # a request failed: its owner should not reuse it
        try:
            self._client = AdminClient(
                {
                    **config,
                    "socket.timeout.ms": int(timeout * 1000),
                    "socket.connection.setup.timeout.ms": int(timeout * 1000),
                    "log.connection.close": False,
                    "logger": logger,
                    "error_cb": self._client_errors.append,
                }
            )
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            detail = error.str() if isinstance(error, KafkaError) else str(exc)
            raise InvalidClientConfig(detail) from exc

    def describe_cluster(self) -> ClusterDescription:
        future = self._client.describe_cluster(request_timeout=self.timeout)
        result = self._wait(future, "describe the cluster")
        controller = result.controller.id if result.controller else None
        return ClusterDescription(result.cluster_id, len(result.nodes), controller)
