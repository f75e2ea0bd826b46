"""A merge flow into a destination topic that exists but that the broker asked did not know
yet (KRaft: a broker learns of a topic from the controller after its creation returned, as
when two flows aggregate into one topic the first of them makes)."""

from __future__ import annotations

import pytest

from devstack import kafka
from infra.kafka_errors import TopicNotFound
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import MergeFlow
from replication.topics import merge_flows
from tests.memory_kafka import MemoryAdmin

pytestmark = pytest.mark.django_db
ACTOR = audit.Actor.system("tests")


@pytest.fixture
def all_unseen_once(monkeypatch):
    """Topic "all" is not found the first time it is described."""
    described = MemoryAdmin.describe_topic
    unseen = {"all"}

    def describe(self, name):
        if name in unseen:
            unseen.discard(name)
            raise TopicNotFound(f"Topic {name!r} does not exist")
        return described(self, name)

    monkeypatch.setattr(MemoryAdmin, "describe_topic", describe)


def test_a_topic_made_meanwhile_is_used_as_it_is_and_mapped_by_the_partitions_it_has(
    make_link, make_topic, all_unseen_once
):
    make_topic(kafka.SOURCE, "west", partitions=4)
    make_topic(kafka.DESTINATION, "all", partitions=2)

    flow = merge_flows.create_flow(ACTOR, make_link(), "west", "all")

    stored = MergeFlow.objects.get(pk=flow.pk)
    assert (stored.mapping, stored.created_topic) == (MergeFlow.Mapping.BY_KEY, False)


def test_one_to_one_asked_into_a_topic_made_meanwhile_with_fewer_partitions_is_refused(
    make_link, make_topic, all_unseen_once
):
    make_topic(kafka.SOURCE, "west", partitions=4)
    make_topic(kafka.DESTINATION, "all", partitions=2)

    with pytest.raises(ReplicationError, match="one to one only between equal counts"):
        merge_flows.create_flow(ACTOR, make_link(), "west", "all", mapping="one-to-one")

    assert not MergeFlow.objects.exists()
