"""A cluster's brokers through the Kafka admin adapter, as Kafka REST v3's broker reads serve
them: each broker's address and rack (`BrokerNode`), and the configs of one broker or the
cluster-wide dynamic defaults, with their sources and synonyms (`ConfigDetail`). Reads only."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import ConfigResource, ResourceType

from .kafka_errors import AdminRequests
from .kafka_topics import ConfigDetail, config_details

CLUSTER_DEFAULT = "DYNAMIC_DEFAULT_BROKER_CONFIG"


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
        (what `kafka-configs --entity-type brokers --entity-default` sets). librdkafka refuses
        to describe the default resource (a broker named ""), so those are read from a broker's
        configs: a default is the value where the broker sets none of its own, else a synonym
        (confluent-kafka keeps one synonym per name, so a default a broker overrides with the
        same name's synonym hidden is not seen)."""
        if broker is not None:
            return self._broker_entries(broker)
        found = []
        for c in self._broker_entries(self.brokers()[0].broker_id):
            if c.source == CLUSTER_DEFAULT:
                found.append(c)
                continue
            found += [
                ConfigDetail(name, value, source, False, False, c.is_sensitive, [])
                for name, value, source in c.synonyms
                if source == CLUSTER_DEFAULT
            ]
        return found

    def _broker_entries(self, broker: int) -> list[ConfigDetail]:
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        futures = self._client.describe_configs([resource], request_timeout=self.timeout)
        return config_details(self._wait(futures[resource], f"read broker {broker}'s configs"))
