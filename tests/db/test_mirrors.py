"""Mirror topics on in-memory clusters: every refusal, and the state each action leaves (creation
by config class, read-only enforcement by a real broker, describe with lag and bulk creation:
tests/integration/test_mirrors.py)."""

import pytest

from devstack import kafka
from infra.processes import wait_for
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, MirrorTopic
from replication.topics.mirrors import create_mirror, delete_mirror, pause_mirror
from tests import memory_kafka

ACTOR = audit.Actor.system("tests")


def nothing_left_of(topic: str) -> bool:
    """No topic, no ACL of the mirror on the (in-memory) destination, and no row of it."""
    destination = memory_kafka.cluster(kafka.DESTINATION.bootstrap)
    return (
        topic not in destination.topics
        and not destination.acls_on(topic)
        and not MirrorTopic.objects.filter(mirror_topic=topic).exists()
    )


@pytest.mark.parametrize(
    "kwargs,expected,status",
    [
        ({"configs": {"cleanup.policy": "compact"}}, "always mirrored from the source", 400),
        ({"configs": {"retention.ms": "soon"}}, "would refuse mirror topic", 400),
        ({"configs": {"no.such.config": "1"}}, "would refuse mirror topic", 400),
        ({"replication_factor": 3}, "would refuse mirror topic", 400),
        ({"replication_factor": 0}, "from 1 to 32767", 400),
        ({"mirror_topic": "another-name"}, "named after its source topic", 400),
    ],
)
def test_bad_mirrors_are_refused_and_nothing_is_left_behind(
    make_link, make_topic, topic_name, kwargs, expected, status
):
    make_topic(kafka.SOURCE, topic_name)
    with pytest.raises(ReplicationError, match=expected) as refused:
        create_mirror(ACTOR, make_link(), topic_name, **kwargs)
    assert refused.value.status == status
    assert nothing_left_of(topic_name)
    assert AuditEvent.objects.get(action="mirror.create").result == "refused"


def test_a_missing_source_topic_is_refused(make_link, topic_name):
    with pytest.raises(ReplicationError, match="does not exist on the source") as refused:
        create_mirror(ACTOR, make_link(), topic_name)
    assert refused.value.status == 404
    assert nothing_left_of(topic_name)


def test_a_topic_mirrored_by_another_link_is_refused(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    first = make_link()
    create_mirror(ACTOR, first, topic_name)
    second = make_link()
    with pytest.raises(ReplicationError, match=f"already a mirror topic of link '{first.name}'"):
        create_mirror(ACTOR, second, topic_name)
    assert [m.link_id for m in MirrorTopic.objects.all()] == [first.pk]


def test_validate_only_creates_nothing(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    mirror = create_mirror(ACTOR, make_link(), topic_name, validate_only=True)
    assert mirror.pk is None and mirror.num_partitions == 2
    assert nothing_left_of(topic_name)
    assert not AuditEvent.objects.filter(action="mirror.create").exists()


def test_a_stopped_mirror_cannot_be_paused(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(ACTOR, make_link(), topic_name)
    mirror.state = MirrorTopic.State.STOPPED
    mirror.save()
    with pytest.raises(ReplicationError, match="has already stopped its mirror") as refused:
        pause_mirror(ACTOR, mirror)
    assert refused.value.status == 409


def test_deleting_a_mirror_removes_the_topic_and_its_acls(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(ACTOR, make_link(), topic_name)
    delete_mirror(ACTOR, mirror)
    assert wait_for(lambda: nothing_left_of(topic_name), 30)
    assert AuditEvent.objects.filter(action="mirror.delete", result="ok").count() == 1
