"""Requests racing for one object, through the real web server: the database decides, exactly
one wins, the others are refused clearly, and the audit trail says so once."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from devstack import kafka
from replication import audit
from replication.mirrors import create_mirror
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.tokens import create_token

pytestmark = pytest.mark.integration


def _call(url: str, token: str, method: str) -> tuple[int, dict]:
    request = urllib.request.Request(  # noqa: S310 - the test server's own URL
        url, method=method, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - test server
            body = response.read()
            return response.status, json.loads(body) if body else {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_concurrent_forced_deletes_of_one_link_delete_it_once(
    live_server, users, make_link, make_topic, topic_name
):
    link = make_link({"cluster.link.paused": "true"})
    for i in range(2):
        create_mirror(
            audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, f"{topic_name}-{i}")
        )
    _, token = create_token(audit.Actor.system("tests"), users["admin"], f"t-{uuid.uuid4().hex}")
    url = (
        f"{live_server.url}/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}"
        "?force=true&reason=retire"
    )
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: _call(url, token, "DELETE"), range(4)))

    statuses = sorted(status for status, _ in answers)
    assert statuses.count(204) == 1, answers
    assert all(status in (404, 409) for status in statuses[1:]), answers
    for status, body in answers:
        if status != 204:
            assert body["message"] and "Traceback" not in body["message"], body
    assert not ClusterLink.objects.filter(pk=link.pk).exists()
    deleted = AuditEvent.objects.filter(action="link.delete", target=f"link {link.name}")
    assert [e.result for e in deleted].count("ok") == 1
    assert not MirrorTopic.objects.filter(link_id=link.pk).exists()


def test_a_mirror_made_while_its_link_is_being_deleted_is_not_deleted_with_it(
    make_link, make_topic, topic_name
):
    from unittest import mock

    from replication import links, promote
    from replication.errors import ReplicationError

    actor = audit.Actor.system("tests")
    link = make_link({"cluster.link.paused": "true"})
    create_mirror(actor, link, make_topic(kafka.SOURCE, f"{topic_name}-old"))
    late_topic = make_topic(kafka.SOURCE, f"{topic_name}-late")
    fail_over = promote.stop_mirrors

    def fail_over_then_someone_adds_a_mirror(*args, **kwargs):
        outcomes = fail_over(*args, **kwargs)
        create_mirror(actor, link, late_topic)
        return outcomes

    with (
        mock.patch.object(promote, "stop_mirrors", fail_over_then_someone_adds_a_mirror),
        pytest.raises(ReplicationError, match="was added to link .* meanwhile"),
    ):
        links.delete_link(actor, link, force=True)
    assert ClusterLink.objects.filter(pk=link.pk).exists()
    assert MirrorTopic.objects.get(mirror_topic=late_topic).state == MirrorTopic.State.LINK_PAUSED
