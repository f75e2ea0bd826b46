"""The embedded clusters are real Kafka clusters with the listener and ACL layout we rely on."""

import base64
import importlib
import subprocess
import time
import uuid

import pytest
from confluent_kafka import KafkaError

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import TopicNotFound
from infra.kafka_topics import kafka_id
from infra.processes import wait_for
from replication.core import read_only
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.mirrors import create_mirror
from spark_jobs import translation
from tests import leftovers
from tests.conftest import ROOT, admin_config
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, consume_all, produce

pytestmark = pytest.mark.integration

# Within the brokers' 7-day retention, so the retention check never deletes them mid-test.
RECENT = int(time.time() * 1000) - 60_000


@pytest.mark.parametrize("node", kafka.NODES, ids=lambda n: n.name)
def test_it_produces_and_consumes_on_each_cluster(node, make_topic, topic_name):
    make_topic(node, topic_name)
    sent = [
        {
            "key": b"k1",
            "value": b"first",
            "headers": [("h", b"\x00\x01"), ("h", b"2")],
            "timestamp": RECENT,
        },
        {"key": None, "value": b"second", "timestamp": RECENT + 1},
        {"key": b"k3", "value": None, "timestamp": RECENT + 2},
    ]
    reports = produce({"bootstrap.servers": node.bootstrap}, topic_name, sent)
    assert [(e, p, o) for e, p, o in reports] == [(None, 0, 0), (None, 0, 1), (None, 0, 2)]

    got = consume_all(node.bootstrap, topic_name, expected=3)
    assert [(m.partition(), m.offset(), m.key(), m.value()) for m in got] == [
        (0, 0, b"k1", b"first"),
        (0, 1, None, b"second"),
        (0, 2, b"k3", None),
    ]
    assert got[0].headers() == [("h", b"\x00\x01"), ("h", b"2")]
    assert [m.timestamp()[1] for m in got] == [RECENT + i for i in range(3)]


def test_a_read_only_topic_refuses_ordinary_producers_and_the_replicator_but_not_a_super_user(
    make_topic, topic_name, var_dir
):
    node = kafka.DESTINATION
    make_topic(node, topic_name)
    assert read_only.enforce(KafkaAdmin(admin_config(node)), topic_name)
    # The controller has committed them; wait until the broker's authorizer holds them too.
    assert wait_for(lambda: acls_on(node, topic_name) == READ_ONLY_ACLS, 30)

    # An anonymous client on the PLAINTEXT listener is refused by the broker itself.
    reports = produce({"bootstrap.servers": node.bootstrap}, topic_name, [{"value": b"nope"}])
    assert reports[0][0] is not None
    assert reports[0][0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # So is Kafka's own console producer.
    cli = subprocess.run(
        [
            str(ROOT / "bin" / "kafka-console-producer"),
            "--topic",
            topic_name,
            "--bootstrap-server",
            f"localhost:{node.plaintext_port}",
        ],
        input="typed by hand\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "TopicAuthorizationException" in cli.stderr or "Not authorized" in cli.stderr, cli.stderr

    # So is the links' replicator principal: no super-user, it only reads.
    replicator = kafka.sasl_client_config(node, var_dir, user="replicator")
    reports = produce(replicator, topic_name, [{"value": b"nope"}])
    assert reports[0][0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # The super-user (the console's admin, which writes mirrors) passes every ACL.
    admin = kafka.sasl_client_config(node, var_dir, user="admin")
    reports = produce(admin, topic_name, [{"key": b"r", "value": b"mirrored"}])
    assert reports == [(None, 0, 0)]

    # And anyone can still read: exactly the admin's record, nothing from the refused ones.
    got = consume_all(node.bootstrap, topic_name, expected=1)
    assert [(m.offset(), m.key(), m.value()) for m in got] == [(0, b"r", b"mirrored")]


def test_kafka_topics_cli_works_as_in_the_tutorial(source_bootstrap, topic_name):
    result = subprocess.run(
        [
            str(ROOT / "bin" / "kafka-topics"),
            "--create",
            "--topic",
            topic_name,
            "--bootstrap-server",
            "localhost:9092",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"Created topic {topic_name}."

    def listed() -> bool:
        run = subprocess.run(
            [str(ROOT / "bin" / "kafka-topics"), "--list", "--bootstrap-server", "localhost:9092"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return topic_name in run.stdout.split()

    # Made on the controller is not yet listed by the broker the tool asks (KRaft): as a user
    # would, the tool is run again until that broker has applied the new topic.
    assert wait_for(listed, 60, 1, ignore=()), f"kafka-topics --list never listed {topic_name}"
    leftovers.delete_topics(kafka.SOURCE, [topic_name])


def test_translations_stored_under_librdkafkas_form_of_a_topic_id_are_found_by_kafkas_form(
    devstack,
):
    """Ids were once kept as librdkafka prints them (`+` and `/`); the stored translation of a
    mirror made then must still be found now that ids take Kafka's form (`-` and `_`)."""
    config = admin_config(kafka.DESTINATION)
    raw = base64.b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    raw = "+/" + raw[2:]  # surely one of each
    translation.store(config, [(raw, 0, translation.Entry(5, 0))])
    kafka_form = kafka_id(raw)
    assert kafka_form.startswith("-_") and not set("+/=") & set(kafka_form)
    runs = translation.load(config, {kafka_form})
    assert runs[(kafka_form, 0)].next_source(0) == 5


def test_stored_source_topic_ids_are_migrated_to_kafkas_form(make_link, make_topic, topic_name):
    from django.apps import apps

    migration = importlib.import_module("replication.migrations.0007_kafka_topic_ids")
    link = make_link({"cluster.link.paused": "true"})
    mirror = create_mirror(audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, topic_name))
    kafka_form = mirror.source_topic_id
    old_form = kafka_form.replace("-", "+").replace("_", "/")
    MirrorTopic.objects.filter(pk=mirror.pk).update(source_topic_id=old_form)
    migration.to_kafka_form(apps, None)
    assert MirrorTopic.objects.get(pk=mirror.pk).source_topic_id == kafka_form


def test_offsets_of_a_topic_made_after_the_client_last_read_metadata_are_read_at_the_next_try(
    make_topic, topic_name
):
    """A client whose cached metadata lacks a new topic said "no such topic" for as long as it
    lived when asked with topics it knew (a runner asking for mirrors made in batches)."""
    known, new = make_topic(kafka.SOURCE, f"{topic_name}-a"), f"{topic_name}-b"
    admin = KafkaAdmin(admin_config(kafka.SOURCE), timeout=10)
    wanted = [(known, 0), (new, 0)]
    with pytest.raises(TopicNotFound):
        admin.readable_offsets(wanted)
    make_topic(kafka.SOURCE, new)
    assert wait_for(lambda: _readable(admin, wanted) == {known: 0, new: 0}, timeout=10)


def _readable(admin: KafkaAdmin, wanted: list[tuple[str, int]]) -> dict[str, int]:
    try:
        return {t: offset for (t, _), offset in admin.readable_offsets(wanted)[0].items()}
    except TopicNotFound:
        return {}
