"""What a call to another network zone carries (infra/wire.py): every value the Kafka adapter
takes or gives comes back equal and of its own type, and the adapter's errors as themselves;
nothing else is carried, either way."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from infra import wire
from infra.kafka_acls import EVERY_ACL
from infra.kafka_admin import ClusterDescription
from infra.kafka_copy import Record
from infra.kafka_errors import KafkaAdminError, TopicNotFound, Unreachable
from infra.kafka_groups import GroupDetail, GroupMember
from infra.kafka_topics import ConfigDetail, NewTopicSpec, PartitionReplicas, TopicDetail


def carried(value):
    return wire.decode(json.loads(json.dumps(wire.encode(value))))


@pytest.mark.parametrize(
    "value",
    [
        {("orders", 0): 12, ("orders", 1): 0},
        {"a": {"b": None}},
        [1, "two", 3.5, True, None],
        {"orders", "payments"},
        b"\x00\xffbytes",
        ClusterDescription("AbC", 3, None),
        TopicDetail("t", False, [PartitionReplicas(0, 1, [1, 2], [1], 0, 9, 4)]),
        ConfigDetail(
            "retention.ms", None, "DEFAULT_CONFIG", True, False, False, [("a", None, "b")]
        ),
        NewTopicSpec("t", 3, None, {"cleanup.policy": "compact"}),
        GroupDetail(
            "g", False, "Stable", "range", 1, [GroupMember("m", None, "c", "/h", [("t", 0)])]
        ),
        [Record(4, None, b"v", (("h", b"x"), ("n", None)), 1700000000000, True)],
        EVERY_ACL,
        AclBinding(
            ResourceType.TOPIC,
            "orders",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
    ],
)
def test_each_value_the_adapter_takes_or_gives_comes_back_equal_and_of_its_type(value):
    back = carried(value)

    assert back == value
    assert type(back) is type(value)


def test_the_adapters_errors_come_back_as_themselves_and_any_other_as_a_kafka_admin_error():
    not_found = carried(TopicNotFound("Topic x does not exist.", 3))
    assert type(not_found) is TopicNotFound and not_found.code == 3
    assert str(not_found) == "Topic x does not exist."
    assert type(carried(Unreachable("down"))) is Unreachable
    timed_out = carried(KafkaException(KafkaError(KafkaError._TIMED_OUT, "reading t[0]")))
    assert isinstance(timed_out, KafkaException)
    assert timed_out.args[0].code() == KafkaError._TIMED_OUT
    assert timed_out.args[0].str() == "reading t[0]"
    other = carried(ValueError("bad value"))
    assert type(other) is KafkaAdminError and str(other) == "bad value"


def test_an_iterable_argument_arrives_as_a_list():
    assert carried(name for name in ("a", "b")) == ["a", "b"]
    assert carried({"a": 1}.keys()) == ["a"]


class Unknown:
    pass


def test_nothing_else_is_carried_either_way():
    with pytest.raises(TypeError, match="a Unknown cannot be carried"):
        wire.encode(Unknown())
    with pytest.raises(TypeError, match="'Popen' is not a type carried between hosts"):
        wire.decode({"data": "Popen", "fields": {"args": "sh"}})
    with pytest.raises(TypeError, match="not a carried value"):
        wire.decode({"eval": "1"})
