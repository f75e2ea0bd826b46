"""Offsets a client answers without an error but that are none (-1001 while a partition's
leader moves) are refused, not taken for an end or a start: the soak caught a copy placed at
-1001 and a comparison starting there."""

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import TopicPartition

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, Unreachable
from infra.kafka_topics import MAX_RECORDS_PER_REQUEST, NewTopicSpec, topic_batches

OFFSET_INVALID = -1001


class Client:
    def __init__(self, answers: list[int]):
        self.answers = answers
        self.asked = 0

    def list_offsets(self, request, request_timeout):
        self.asked += 1
        offset = self.answers.pop(0) if self.answers else OFFSET_INVALID
        futures = {}
        for tp in request:
            future = Future()
            future.set_result(SimpleNamespace(offset=offset))
            futures[TopicPartition(tp.topic, tp.partition)] = future
        return futures

    def list_topics(self, topic, timeout):
        return None


def admin(answers: list[int]) -> KafkaAdmin:
    found = KafkaAdmin.__new__(KafkaAdmin)
    found.timeout, found.failed = 1.0, False
    found._client = Client(answers)
    return found


def test_an_end_the_leader_did_not_give_is_asked_again_then_refused(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    moving = admin([OFFSET_INVALID, 42])
    assert moving.offsets([("t", 0)]) == {("t", 0): 42}
    gone = admin([])
    with pytest.raises(KafkaAdminError, match="partition 0's leader gave none") as refused:
        gone.offsets([("t", 0)], "earliest")
    assert gone._client.asked == 5
    assert not isinstance(refused.value, Unreachable)  # the cluster answered


def test_a_cluster_that_does_not_answer_is_unreachable_not_a_refusal():
    nowhere = KafkaAdmin({"bootstrap.servers": "127.0.0.1:9", "log_level": 0}, timeout=1)
    with pytest.raises(Unreachable, match="Check that the brokers are running"):
        nowhere.describe_topics(["t"])


def test_a_time_with_no_record_after_it_is_an_answer():
    assert admin([-1]).offsets([("t", 0)], 1_000) == {("t", 0): -1}


def test_a_thousand_topics_of_ten_partitions_are_created_in_requests_the_controller_takes():
    """A KRaft controller refuses more than 10,000 metadata records in one request."""
    topics = [NewTopicSpec(f"t{i}", 10, None, {"cleanup.policy": "compact"}) for i in range(1000)]

    batches = list(topic_batches(topics))

    assert [t for batch in batches for t in batch] == topics  # each once, in order
    assert len(batches) == 3
    for batch in batches:
        assert sum(1 + t.partitions + len(t.configs) for t in batch) <= MAX_RECORDS_PER_REQUEST
