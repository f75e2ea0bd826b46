"""Mirror topics against the real clusters: creation by config class, read-only enforcement by
the destination broker, describe, pause / resume, delete, and every refusal."""

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import TopicNotFound
from infra.processes import wait_for
from replication.core.errors import ReplicationError
from replication.models import AuditEvent, MirrorTopic
from replication.observe.lag import describe_mirror, describe_mirrors
from replication.topics.mirrors import (
    create_mirror,
    create_mirrors,
    list_mirrors,
    pause_mirror,
    resume_mirror,
)
from tests.conftest import admin_config
from tests.db.test_mirrors import ACTOR
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, consume_all, produce, run_tool
from tests.mirror_checks import topic_gone

pytestmark = pytest.mark.integration


def destination_admin() -> KafkaAdmin:
    return KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10)


def nothing_left_of(topic: str) -> bool:
    """No topic, no ACL of the mirror on the destination broker, and no row of it."""
    try:
        destination_admin().describe_topic(topic)
        return False
    except TopicNotFound:
        pass
    return (
        not acls_on(kafka.DESTINATION, topic)
        and not MirrorTopic.objects.filter(mirror_topic=topic).exists()
    )


def test_a_mirror_copies_partitions_and_configs_by_class(make_link, make_topic, topic_name):
    make_topic(
        kafka.SOURCE,
        topic_name,
        partitions=3,
        **{
            "retention.ms": "123456890",
            "cleanup.policy": "compact",
            "max.message.bytes": "2000000",
        },
    )
    link = make_link()
    mirror = create_mirror(ACTOR, link, topic_name, configs={"segment.ms": "3600000"})

    assert (mirror.state, mirror.num_partitions, mirror.replication_factor) == ("ACTIVE", 3, 1)
    info = destination_admin().describe_topic(topic_name)
    assert info.partitions == 3
    assert info.topic_id != mirror.source_topic_id  # its own topic, with its own id
    configs = destination_admin().topic_configs(topic_name)
    set_on_mirror = {k: v.value for k, v in configs.items() if v.is_set}
    assert set_on_mirror == {
        # strictly mirrored: always, as on the source
        "cleanup.policy": "compact",
        "max.message.bytes": "2000000",
        "message.timestamp.type": "CreateTime",
        # synced: set on the source
        "retention.ms": "123456890",
        # the override given at creation
        "segment.ms": "3600000",
    }
    assert acls_on(kafka.DESTINATION, topic_name) == READ_ONLY_ACLS
    assert mirror.read_only_enforced


def test_synced_configs_left_out_of_the_include_list_are_not_copied(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name, **{"retention.ms": "1000000", "segment.ms": "7200000"})
    link = make_link({"topic.config.sync.include": "segment.ms"})
    create_mirror(ACTOR, link, topic_name)
    configs = destination_admin().topic_configs(topic_name)
    assert configs["segment.ms"].value == "7200000"
    assert not configs["retention.ms"].is_set


def test_the_mirror_is_read_only_for_ordinary_clients_and_kafkas_own_producer(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(ACTOR, make_link(), topic_name)
    plain = {"bootstrap.servers": kafka.DESTINATION.bootstrap}
    assert wait_for(lambda: acls_on(kafka.DESTINATION, topic_name) == READ_ONLY_ACLS, 30)

    reports = produce(plain, topic_name, [{"value": b"hi"}])
    assert reports[0][0] is not None
    assert reports[0][0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    cli = run_tool(
        "kafka-console-producer",
        "--topic",
        topic_name,
        "--bootstrap-server",
        "localhost:9093",
        stdin="hi\n",
    )
    assert "TopicAuthorizationException" in cli.stderr or "Not authorized" in cli.stderr

    altered = run_tool(
        "kafka-configs",
        "--alter",
        "--topic",
        topic_name,
        "--add-config",
        "retention.ms=1",
        "--bootstrap-server",
        "localhost:9093",
    )
    assert altered.returncode != 0 and "authoriz" in altered.stderr.lower()

    # Reading and describing stay open to everyone, as the tutorial's kafka-configs does.
    described = run_tool(
        "kafka-configs", "--describe", "--topic", topic_name, "--bootstrap-server", "localhost:9093"
    )
    assert described.returncode == 0 and "cleanup.policy=delete" in described.stdout
    # The privileged principal (as the link will) writes; an anonymous consumer reads it back.
    assert produce(admin_config(kafka.DESTINATION), topic_name, [{"value": b"copied"}]) == [
        (None, 0, 0)
    ]
    got = consume_all(kafka.DESTINATION.bootstrap, topic_name, expected=1)
    assert [(m.offset(), m.value()) for m in got] == [(0, b"copied")]


def test_a_prefixed_link_names_mirrors_with_its_prefix(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.prefix": "dc1."})
    mirror = create_mirror(ACTOR, link, topic_name)
    assert mirror.mirror_topic == f"dc1.{topic_name}"
    assert destination_admin().describe_topic(f"dc1.{topic_name}").partitions == 1
    with pytest.raises(ReplicationError, match=f"expected 'dc1.{topic_name}'"):
        create_mirror(ACTOR, link, topic_name, mirror_topic=topic_name)
    assert nothing_left_of(topic_name)
    assert MirrorTopic.objects.get().pk == mirror.pk  # the first, and no other


def test_a_name_taken_on_the_destination_is_refused(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    make_topic(kafka.DESTINATION, topic_name)
    with pytest.raises(ReplicationError, match="already exists on destination") as refused:
        create_mirror(ACTOR, make_link(), topic_name)
    assert refused.value.status == 409
    assert not acls_on(kafka.DESTINATION, topic_name)
    assert not MirrorTopic.objects.exists()
    assert destination_admin().describe_topic(topic_name).partitions == 1  # the user's, kept


def test_a_topic_someone_makes_just_before_the_mirror_is_made_is_left_to_them(
    make_link, make_topic, topic_name, monkeypatch
):
    """Between create_mirror's look at the destination and its create, someone outside
    Isthmus makes a topic of that name: the mirror is refused as taken, as when the name was
    taken before, and only what the call made is undone. Their topic, its records and their
    own ACL (one of the read-only rules, set earlier) stay; no mirror row is left."""
    make_topic(kafka.SOURCE, topic_name)
    link = make_link()
    theirs = admin_config(kafka.DESTINATION)
    their_acl = AclBinding(
        ResourceType.TOPIC,
        topic_name,
        ResourcePatternType.LITERAL,
        "User:*",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    acl_admin = AdminClient(theirs)  # kept until its answer comes
    acl_admin.create_acls([their_acl])[their_acl].result(timeout=10)
    # (seen by the broker first: a mirror keeps only the rules it read there before it began)
    assert wait_for(lambda: acls_on(kafka.DESTINATION, topic_name) == {("READ", "ALLOW")}, 30)
    made: dict[str, str] = {}
    real_create = KafkaAdmin.create_topics

    def someone_is_quicker(admin: KafkaAdmin, topics, validate_only=False):
        if [t.name for t in topics] == [topic_name] and not validate_only:
            make_topic(kafka.DESTINATION, topic_name)  # with a real admin client, and removed
            assert produce(theirs, topic_name, [{"value": b"theirs"}] * 3)[-1][0] is None
            made["id"] = destination_admin().describe_topic(topic_name).topic_id
        return real_create(admin, topics, validate_only)

    monkeypatch.setattr(KafkaAdmin, "create_topics", someone_is_quicker)
    with pytest.raises(ReplicationError, match="already exists on destination") as refused:
        create_mirror(ACTOR, link, topic_name)

    assert refused.value.status == 409
    assert "id" in made, "the hook did not run: the race was not made"
    assert destination_admin().describe_topic(topic_name).topic_id == made["id"]
    got = consume_all(kafka.DESTINATION.bootstrap, topic_name, expected=3)
    assert [m.value() for m in got] == [b"theirs"] * 3
    assert acls_on(kafka.DESTINATION, topic_name) == {("READ", "ALLOW")}
    assert not MirrorTopic.objects.filter(mirror_topic=topic_name).exists()
    assert AuditEvent.objects.get(action="mirror.create").result == "refused"


def test_describe_reads_offsets_and_lag_from_both_clusters(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    records = [{"value": b"first", "partition": 0}, {"value": b"second", "partition": 0}]
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, topic_name, records)
    mirror = create_mirror(ACTOR, make_link(), topic_name)

    status = describe_mirror(mirror)
    assert status.errors == []
    rows = [
        (p.partition, p.state, p.dest_log_end_offset, p.source_high_watermark, p.lag)
        for p in status.partitions
    ]
    # No data is copied yet (that is the stream's job): the lag is the whole source.
    assert rows == [(0, "ACTIVE", 0, 2, 2), (1, "ACTIVE", 0, 0, 0)]
    assert status.max_lag == 2
    assert [p.last_fetch_source_high_watermark for p in status.partitions] == [-1, -1]


def test_describing_many_mirrors_asks_a_source_that_is_down_only_once(
    make_link, make_topic, topic_name, monkeypatch
):
    link = make_link()
    made = []
    for name in (f"{topic_name}-a", f"{topic_name}-b"):
        make_topic(kafka.SOURCE, name)
        made.append(create_mirror(ACTOR, link, name))
    # The source goes away: its address now answers nothing.
    link.set_configs({**link.all_configs(), "bootstrap.servers": "127.0.0.1:1"})
    link.save()
    asked = []
    real_describe = KafkaAdmin.describe_topics

    def describe_topics(admin, names):
        asked.append(admin.bootstrap)
        return real_describe(admin, names)

    monkeypatch.setattr(KafkaAdmin, "describe_topics", describe_topics)
    statuses = describe_mirrors(list_mirrors(link=link))

    assert [s.mirror.mirror_topic for s in statuses] == [m.mirror_topic for m in made]
    for status in statuses:
        assert [p.dest_log_end_offset for p in status.partitions] == [0]
        assert [p.source_high_watermark for p in status.partitions] == [-1]
        assert len(status.errors) == 1 and status.errors[0].startswith("Source: ")
        assert "127.0.0.1:1" in status.errors[0]
    assert asked.count("127.0.0.1:1") == 1
    assert len(asked) == 2  # one request for both mirrors on each end


def test_a_source_topic_gone_is_said_of_its_mirror_alone(make_link, make_topic, topic_name):
    link = make_link()
    made = []
    for name in (f"{topic_name}-kept", f"{topic_name}-gone"):
        make_topic(kafka.SOURCE, name)
        produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, name, [{"value": b"v"}])
        made.append(create_mirror(ACTOR, link, name))
    KafkaAdmin(admin_config(kafka.SOURCE)).delete_topic(f"{topic_name}-gone")
    topic_gone(kafka.SOURCE, f"{topic_name}-gone")

    kept, gone = describe_mirrors(made)

    assert kept.errors == [] and [p.lag for p in kept.partitions] == [1]
    assert len(gone.errors) == 1 and gone.errors[0].startswith("Source: ")
    assert [p.lag for p in gone.partitions] == [-1]


def test_pausing_and_resuming_a_mirror(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(ACTOR, make_link(), topic_name)
    pause_mirror(ACTOR, mirror)
    assert MirrorTopic.objects.get(pk=mirror.pk).state == "PAUSED"
    assert [m.mirror_topic for m in list_mirrors(states=["PAUSED"])] == [topic_name]
    with pytest.raises(ReplicationError, match="already paused"):
        pause_mirror(ACTOR, mirror)
    resume_mirror(ACTOR, mirror)
    assert MirrorTopic.objects.get(pk=mirror.pk).state == "ACTIVE"
    with pytest.raises(ReplicationError, match="is not paused"):
        resume_mirror(ACTOR, mirror)
    # Paused, the topic is still read-only.
    assert acls_on(kafka.DESTINATION, topic_name) == READ_ONLY_ACLS


def test_many_mirrors_are_made_in_bulk_requests_and_all_or_none(
    make_link, make_topic, topic_name, monkeypatch
):
    """A request for many mirrors asks each cluster once per step for all of them (one dry run
    and one create of topics, one ACL request), and one refused topic (here, missing on the
    source) refuses the whole request: no row, topic or ACL of the others is left, and each
    topic's refusal is audited. Taken one by one (automatic mirrors), the others are made."""
    topics = [make_topic(kafka.SOURCE, f"{topic_name}-{i}", partitions=2) for i in range(3)]
    missing = f"{topic_name}-missing"
    link = make_link()
    calls = {"create_topics": 0, "create_acls": 0}
    for method in calls:
        real = getattr(KafkaAdmin, method)

        def counted(admin, *args, _real=real, _name=method, **kwargs):
            calls[_name] += 1
            return _real(admin, *args, **kwargs)

        monkeypatch.setattr(KafkaAdmin, method, counted)

    with pytest.raises(ReplicationError, match="1 of the 4 mirror topics cannot be created") as no:
        create_mirrors(ACTOR, link, [*topics, missing])
    assert f"{missing}: Source topic {missing!r} does not exist" in str(no.value)
    assert not MirrorTopic.objects.exists()
    assert not set(topics) & destination_admin().list_topic_names()
    assert all(acls_on(kafka.DESTINATION, t) == set() for t in topics)
    refusals = AuditEvent.objects.filter(action="mirror.create", result="refused")
    assert refusals.count() == 1 and missing in refusals.get().target

    made = create_mirrors(ACTOR, link, [*topics, missing], each_on_its_own=True)
    assert sorted(m.mirror_topic for m in made.mirrors) == sorted(topics)
    assert list(made.refused) == [missing]
    assert calls == {"create_topics": 3, "create_acls": 1}  # 2 dry runs, 1 create; 1 ACL set
    for topic in topics:
        assert destination_admin().describe_topic(topic).partitions == 2
        assert acls_on(kafka.DESTINATION, topic) == READ_ONLY_ACLS
    assert MirrorTopic.objects.filter(state=MirrorTopic.State.ACTIVE).count() == 3
    assert AuditEvent.objects.filter(action="mirror.create", result="ok").count() == 3
