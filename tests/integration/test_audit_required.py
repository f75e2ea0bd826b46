"""An action whose audit event cannot be written is refused, with nothing changed: on the real
clusters, with the database itself refusing writes to the audit trail (a trigger, as a full
disk or a revoked grant would)."""

from __future__ import annotations

import pytest

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import TopicNotFound
from replication.models import AuditEvent, MirrorTopic
from tests.conftest import admin_config
from tests.db.test_audit_required import _post, _refused, admin_api, trail  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration


def _topic_exists(name: str) -> bool:
    try:
        KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10).describe_topic(name)
    except TopicNotFound:
        return False
    return True


def test_a_mirror_is_not_created_when_its_event_cannot_be_written(
    trail, admin_api, make_link, make_topic, topic_name
):
    link = make_link({"cluster.link.paused": "true"})
    source_topic = make_topic(kafka.SOURCE, topic_name)
    url = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/mirrors"
    trail.down()

    _refused(_post(admin_api, url, {"source_topic_name": source_topic}))
    assert not MirrorTopic.objects.filter(mirror_topic=source_topic).exists()
    assert not _topic_exists(source_topic)

    trail.up()  # the same request goes through once the trail takes writes again
    assert _post(admin_api, url, {"source_topic_name": source_topic}).status_code == 204
    assert _topic_exists(source_topic)
    assert (
        AuditEvent.objects.filter(action="mirror.create", target__contains=source_topic).count()
        == 1
    )
