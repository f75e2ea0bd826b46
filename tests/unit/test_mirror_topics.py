"""What a link's runner reads and stores before a mirror partition starts
(`spark_jobs.mirror_topics`), with its clients made by factories that give in-memory fakes: a
partition whose source starts above offset 0 gets its first translation entry stored before any
copier is handed it, and is not handed out while that entry cannot be stored."""

from __future__ import annotations

from types import SimpleNamespace

from spark_jobs import mirror_topics, translation
from tests.unit.fake_copier_clients import Destination, Producer

TOPIC = "orders"
IDENT = (TOPIC, "id-orders", 0)


class _Admin:
    """The destination's admin client: one mirror topic of one partition, empty, with a
    leader."""

    def describe_topics(self, names: list[str]) -> dict[str, SimpleNamespace]:
        return {n: SimpleNamespace(topic_id="id-orders", partitions=1) for n in names if n == TOPIC}

    def readable_offsets(self, partitions, at="latest"):
        return {tp: 0 for tp in partitions}, {}


class _Reader:
    """The translation reader: nothing stored yet."""

    def runs(self, topic_ids: set[str]) -> dict:
        return {}


class _SourceAdmin:
    def offsets(self, partitions, at="latest"):
        assert at == "earliest"
        return {tp: 40 for tp in partitions}  # retention took the first 40


class _Watch:
    """The link's source watch: the source answers."""

    admin = _SourceAdmin()
    counts: dict[str, int] = {}

    def problem(self) -> str:
        return ""


def _topics(cluster: Destination) -> mirror_topics.MirrorTopics:
    destination = mirror_topics.Destination(
        {"bootstrap.servers": "destination:9092"},
        admin=lambda config: _Admin(),
        reader=lambda config: _Reader(),
    )
    topics = mirror_topics.MirrorTopics(
        "link",
        {"bootstrap.servers": "destination:9092"},
        destination,
        _Watch(),
        {},
        producer=lambda config: Producer(config, cluster),
    )
    topics.learn({TOPIC: TOPIC})
    return topics


def test_a_partition_whose_source_starts_above_zero_gets_its_first_entry_stored_first():
    cluster = Destination()
    topics = _topics(cluster)

    entries, ready = topics.entries_for([IDENT], {TOPIC: TOPIC})

    assert ready and entries[IDENT]["runs"] == [[40, 0]]
    stored = translation.encode(translation.Entry(40, 0))
    assert cluster.mirrored(translation.TOPIC, 0) == [stored], "handed out before it was stored"


def test_a_partition_whose_first_entry_cannot_be_stored_is_not_handed_out():
    cluster = Destination(refused={translation.TOPIC})
    topics = _topics(cluster)

    entries, ready = topics.entries_for([IDENT], {TOPIC: TOPIC})

    assert (entries, ready) == ({}, False)
    assert "cannot start 1 partition(s) yet" in topics.trouble["start"]
