"""Approved requests run by the Celery worker on the real clusters: a promote, a merge flow's
creation and its deletion, each shown on its request (the rules of asking and approving:
tests/db/test_approvals.py). Links are paused and their mirrors' sources empty, so every
mirror has lag 0 without a stream."""

from __future__ import annotations

import pytest
from django.urls import reverse

from devstack import kafka
from replication.actions import approvals
from replication.models import ApprovalRequest, AuditEvent, ClusterLink
from tests.db.test_approvals import _post, _state, _url
from tests.mirror_checks import eventually

pytestmark = pytest.mark.integration


def test_an_approved_promote_runs_on_the_worker_and_the_request_shows_the_result(
    transactional_db, celery_worker, api, mirror_of
):
    mirror = mirror_of("run")
    asked = _post(
        api("operator"),
        _url(mirror, "mirrors:promote"),
        {"mirror_topic_names": [mirror.mirror_topic], "reason": "cut over"},
    )
    assert asked.status_code == 202
    request_id = asked.json()["approval_request"]["id"]
    base = f"/kafka/v3/clusters/{mirror.destination.cluster_id}/approval-requests/{request_id}"
    approved = _post(api("approver"), f"{base}:approve")
    assert approved.json()["state"] == "APPROVED"
    state = eventually(
        lambda: (s := ApprovalRequest.objects.get(pk=request_id).state) != "APPROVED" and s,
        60,
        "the approved request finishing",
    )
    found = api("viewer").get(base).json()
    assert state == "EXECUTED", found
    assert found["approved_by"][0].startswith("approver")
    assert found["result"][0]["state"] == "STOPPED"
    assert _state(mirror) == "STOPPED"
    event = AuditEvent.objects.get(action="mirror.promote", result="ok")
    assert event.actor_name.startswith("operator") and "approved by approver" in event.actor_name
    assert ClusterLink.objects.filter(pk=mirror.link_id).exists()


def test_an_approved_merge_flow_is_created_then_deleted_on_the_worker(
    transactional_db, celery_worker, api, users, make_link, make_topic, topic_name, client_as
):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.paused": "true"})  # needs 1 approval, as links do by default
    base = f"/kafka/v3/clusters/{link.destination.cluster_id}"
    flows = f"{base}/links/{link.name}/flows"
    wanted = {"source_topic_name": topic_name, "destination_topic_name": f"{topic_name}.copy"}

    def approved(answer) -> dict:
        assert answer.status_code == 202, answer.content
        request = answer.json()["approval_request"]
        assert not approvals.acts_at_once(users["operator"], link)
        assert _post(api("approver"), f"{base}/approval-requests/{request['id']}:approve")
        eventually(
            lambda: ApprovalRequest.objects.get(pk=request["id"]).state == "EXECUTED",
            60,
            "the approved request run",
        )
        return request

    asked = approved(_post(api("operator"), flows, {**wanted, "reason": "feed the copy"}))
    assert asked["merge_flow"] == {
        "flow": f"{link.name}.{topic_name}",
        "source_topic": topic_name,
        "destination_topic": f"{topic_name}.copy",
        "mapping": None,
    }
    flow = link.flows.get()
    assert (flow.source_topic, flow.destination_topic) == (topic_name, f"{topic_name}.copy")
    event = AuditEvent.objects.get(action="flow.create", result="ok")
    assert event.actor_name.startswith("operator") and "approved by approver" in event.actor_name
    page = client_as("viewer").get(reverse("approval-detail", args=[asked["id"]]))
    assert f"merge flow {flow.name}: {topic_name} into {topic_name}.copy" in page.content.decode()

    approved(api("operator").delete(f"{flows}/{flow.name}?reason=done+with+it"))
    assert not link.flows.exists()
    assert AuditEvent.objects.filter(action="flow.delete", result="ok").count() == 1
