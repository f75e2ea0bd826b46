"""A cluster's brokers through the Kafka admin adapter, as Kafka REST v3's broker reads serve
them: each broker's address and rack (`BrokerNode`), and the configs of one broker or the
cluster-wide dynamic defaults, with their sources and synonyms (`ConfigDetail`). Reads only."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import ConfigResource, ResourceType

from .kafka_errors import AdminRequests
from .kafka_topics import ConfigDetail, config_details


@dataclass(frozen=True)
class BrokerNode:
    broker_id: int
    host: str
    port: int
    rack: str | None


class BrokerCalls(AdminRequests):
    """`KafkaAdmin`'s reads of the cluster's brokers and their configs."""

    def brokers(self) -> list[BrokerNode]:
        found = self._wait(
            self._client.describe_cluster(request_timeout=self.timeout), "describe the cluster"
        )
        nodes = sorted(found.nodes, key=lambda n: n.id)
        return [BrokerNode(n.id, n.host, n.port, n.rack or None) for n in nodes]

    def broker_config_details(self, broker: int | None) -> list[ConfigDetail]:
        """Every config of `broker`, set or not; with None, the cluster-wide dynamic defaults
        (what `kafka-configs --entity-type brokers --entity-default` sets)."""
        resource = ConfigResource(ResourceType.BROKER, "" if broker is None else str(broker))
        futures = self._client.describe_configs([resource], request_timeout=self.timeout)
        what = "the cluster's broker defaults" if broker is None else f"broker {broker}'s configs"
        return config_details(self._wait(futures[resource], f"read {what}"))
