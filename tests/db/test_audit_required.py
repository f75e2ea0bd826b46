"""An action whose audit event cannot be written is refused, with nothing changed: on in-memory
clusters, with the database itself refusing writes to the audit trail (a trigger, as a full disk
or a revoked grant would)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from devstack import kafka
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import ApprovalRequest, AuditEvent, ClusterLink, MirrorTopic
from replication.topics.mirrors import create_mirror
from tests import audit_trail

TRAIL_DOWN = "the audit disk is full"


class Trail:
    """Switches the database's refusal of new audit events (a trigger) on and off."""

    def down(self) -> None:
        audit_trail.refuse_writes(TRAIL_DOWN)

    def up(self) -> None:
        audit_trail.take_writes()


@pytest.fixture
def trail(db):
    trail = Trail()
    yield trail
    trail.up()


@pytest.fixture
def admin_api(users) -> Client:
    _, secret = create_token(audit.Actor.system("tests"), users["admin"], f"t-{uuid.uuid4().hex}")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def _post(client: Client, url: str, body: dict):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def _refused(response) -> None:
    assert response.status_code == 503, response.content
    message = response.json()["message"]
    assert "The audit trail could not be written: the database refused the write" in message
    assert "nothing was changed" in message


def test_pause_promote_and_link_changes_are_refused_while_the_trail_is_down(
    trail, admin_api, client_as, make_link, make_topic, topic_name
):
    link = make_link({"cluster.link.paused": "true"})
    mirror = create_mirror(audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, topic_name))
    base = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}"
    console = client_as("admin")
    events_before = AuditEvent.objects.count()
    trail.down()
    state_before = MirrorTopic.objects.get(pk=mirror.pk).state

    names = {"mirror_topic_names": [mirror.mirror_topic]}
    response = _post(admin_api, f"{base}/mirrors:pause", names)
    assert response.status_code == 200  # per topic: the topic's own outcome says why
    [outcome] = response.json()["data"]
    assert (
        outcome["error_code"] == 503
        and "audit trail could not be written" in outcome["error_message"]
    )
    _refused(_post(admin_api, f"{base}/mirrors:promote", {**names, "reason": "cut over"}))
    _refused(
        admin_api.put(
            f"{base}/configs/metadata.max.age.ms",
            data=json.dumps({"value": "60000"}),
            content_type="application/json",
        )
    )
    page = console.post(f"/links/{link.destination.name}/{link.name}/resume/", follow=True)
    assert page.status_code == 200
    assert "The audit trail could not be written" in page.content.decode()
    assert TRAIL_DOWN not in page.content.decode()  # the database's words stay in the log

    assert MirrorTopic.objects.get(pk=mirror.pk).state == state_before
    found = ClusterLink.objects.get(pk=link.pk)
    assert found.state == ClusterLink.State.PAUSED
    assert found.configs.get("metadata.max.age.ms") != "60000"
    assert not ApprovalRequest.objects.exists()
    assert AuditEvent.objects.count() == events_before
