"""What PostgreSQL refuses where SQLite goes along, sent as a caller can: names longer than
their column, NUL characters, an address that is none. Each is refused for what it is, or
stored, with its audit event written, the same on both."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from django.test import Client

from console.middleware import MESSAGE as NUL_REFUSED
from devstack import kafka
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import AuditEvent, MirrorTopic
from replication.topics.mirrors import create_mirror
from tests import leftovers

TARGET_LIMIT = AuditEvent._meta.get_field("target").max_length


def test_a_name_far_too_long_is_refused_as_such_and_the_refusal_audited(users, registered_clusters):
    _, secret = create_token(audit.Actor.system("tests"), users["admin"], "long names")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    destination = registered_clusters["destination"]
    name = "a" * 5000
    response = api.post(
        f"/kafka/v3/clusters/{destination.cluster_id}/links?link_name={name}",
        data=json.dumps(
            {"configs": [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]}
        ),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert "Invalid link name" in response.json()["message"]
    [refusal] = AuditEvent.objects.filter(action="link.create")
    assert refusal.result == "refused"
    assert len(refusal.target) == TARGET_LIMIT
    assert refusal.target.startswith("link aaa") and refusal.target.endswith("on destination")
    assert name in refusal.message  # the whole of it, for the record

    with pytest.raises(ReplicationError, match="1-100 characters"):
        create_token(audit.Actor.system("tests"), users["viewer"], "t" * 500)
    assert AuditEvent.objects.get(action="token.create", result="refused").target.endswith(
        "of viewer"
    )


def test_a_mirror_of_the_longest_topic_on_the_longest_link_is_made_and_audited(
    make_link, make_topic
):
    link = make_link({"cluster.link.paused": "true"}, name=uuid.uuid4().hex.ljust(200, "l"))
    topic = make_topic(kafka.SOURCE, leftovers.unique_name("longest").ljust(249, "t"))

    create_mirror(audit.Actor.system("tests"), link, topic)

    assert MirrorTopic.objects.get(link=link).mirror_topic == topic
    [event] = AuditEvent.objects.filter(action="mirror.create")
    assert event.result == "ok" and len(event.target) == TARGET_LIMIT
    assert event.target.startswith(f"mirror {topic[:100]}") and event.target.endswith(link.name)
    assert (event.after["source_topic"], event.after["link"]) == (topic, link.name)


@pytest.mark.django_db
def test_an_address_that_is_no_ip_address_is_left_out_of_the_event():
    actor = audit.Actor(name="proxy user", address="unix:/run/isthmus.sock")
    event = audit.record(actor, "token.revoke", "API token 'x' of nobody")
    event.refresh_from_db()
    assert event.address is None
    assert audit.record(audit.Actor(address="::1"), "a", "b").address == "::1"


def test_a_nul_character_anywhere_in_a_request_is_refused_at_the_door(users, client_as, make_link):
    link = make_link({"cluster.link.paused": "true"})
    _, secret = create_token(audit.Actor.system("tests"), users["admin"], "nul")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    links = f"/kafka/v3/clusters/{link.destination.cluster_id}/links"
    mirrors = f"{links}/{link.name}/mirrors"
    events = AuditEvent.objects.count()

    def post(url: str, body: str):
        return api.post(url, data=body, content_type="application/json")

    for response in (
        api.get(f"{links}/a%00b"),  # a name looked up
        api.get(f"{links}?state=%00"),
        post(f"{links}?link_name=a%00b", "{}"),
        post(f"{mirrors}:pause", json.dumps({"mirror_topic_names": ["a\u0000b"]})),
        post(f"{mirrors}:pause", '{"mirror_topic_names": ["a\\\\\\u0000b"]}'),
    ):
        assert response.status_code == 400, response.content
        assert response.json() == {"error_code": 40002, "message": NUL_REFUSED}
    # a backslash and the text "u0000" is no NUL: answered for what it is
    response = post(f"{mirrors}:pause", '{"mirror_topic_names": ["a\\\\u0000b"]}')
    assert response.status_code == 200 and "u0000b" in response.content.decode()

    admin = client_as("admin")
    for response in (
        admin.get("/users/a%00b/"),
        admin.get("/audit/?target=%00"),
        admin.post("/users/", "username=a%00b", content_type="application/x-www-form-urlencoded"),
    ):
        assert response.status_code == 400
        assert response.content.decode() == NUL_REFUSED
    assert AuditEvent.objects.count() == events  # refused before anything, the audit too

    # where one gets through to the trail (a claimed user name), it is spelt out
    claimed = base64.b64encode(b"a\x00b:isthmus_not-a-token").decode()
    refused = Client(HTTP_AUTHORIZATION=f"Basic {claimed}").get(links)
    assert refused.status_code == 401
    assert AuditEvent.objects.get(action="api.authenticate").actor_name.startswith("a\\x00b")
