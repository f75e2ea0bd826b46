"""The fault tests run on three-broker clusters (`make test-faults`: ISTHMUS_DEVSTACK_BROKERS=3,
on a stack of their own); on one-broker clusters they are skipped, saying so."""

from __future__ import annotations

import signal

import pytest
from django.conf import settings

from devstack import kafka
from devstack.stack import Stack
from infra import processes
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from tests.conftest import admin_config
from tests.integration.conftest import typed  # noqa: F401 (the seed's commands, typed)
from tests.mirror_checks import eventually


@pytest.fixture(autouse=True)
def _three_brokers():
    if settings.DEVSTACK_BROKERS != 3:
        pytest.skip("the fault tests need three-broker clusters: run them with make test-faults")


def leader(node: kafka.KafkaNode, topic: str, partition: int = 0) -> kafka.Broker:
    """The broker leading the partition now."""

    def found() -> int | None:
        try:
            return (
                KafkaAdmin(admin_config(node), timeout=10)
                .partition_replicas(topic)[partition]
                .leader
            )
        except KafkaAdminError:
            return None

    node_id = eventually(found, 60, f"{topic}[{partition}] having a leader on {node.name}")
    return node.brokers[node_id - 1]


def kill(stack: Stack, broker: kafka.Broker) -> None:
    """`kill -9` of the broker's JVM."""
    assert processes.stop(stack.pidfile(broker.name), sig=signal.SIGKILL) is not None


def in_sync(node: kafka.KafkaNode, topic: str, replicas: int = 3) -> None:
    """Wait until every partition of the topic has `replicas` in-sync replicas again."""

    def all_in_sync() -> bool:
        try:
            found = KafkaAdmin(admin_config(node), timeout=10).partition_replicas(topic)
        except KafkaAdminError:
            return False
        return all(len(p.isr) == replicas for p in found)

    eventually(all_in_sync, 120, f"every replica of {topic} on {node.name} in sync")
