"""Role-gated approvals of promote, failover and link deletion through the API and the
console, on the real clusters: the role × action matrix, one audit event per action, the
requester never approving their own request, expired and withdrawn requests staying shut, and
an approved promote run by the Celery worker.

Links here are paused and their mirrors' sources empty, so every mirror has lag 0 without a
stream: these tests are about who may do what, not about copying."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from devstack import kafka
from replication import approvals, audit
from replication.mirrors import create_mirror
from replication.models import ApprovalRequest, AuditEvent, ClusterLink, MirrorTopic
from replication.tokens import create_token

pytestmark = pytest.mark.integration

ROLES = ("viewer", "operator", "approver", "admin")


@pytest.fixture
def api(users):
    def as_role(role: str) -> Client:
        _, secret = create_token(audit.Actor.system("tests"), users[role], f"t-{uuid.uuid4().hex}")
        return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    return as_role


@pytest.fixture
def mirror_of(make_link, make_topic, topic_name):
    """A fresh paused link with a mirror of an empty source topic."""

    def make(suffix: str) -> MirrorTopic:
        topic = make_topic(kafka.SOURCE, f"{topic_name}-{suffix}")
        link = make_link({"cluster.link.paused": "true"})
        return create_mirror(audit.Actor.system("tests"), link, topic)

    return make


def _url(mirror: MirrorTopic, tail: str) -> str:
    return f"/kafka/v3/clusters/{mirror.destination.cluster_id}/links/{mirror.link.name}/{tail}"


def _post(client: Client, url: str, body: dict | None = None, method: str = "post"):
    return getattr(client, method)(
        url, data=json.dumps(body or {}), content_type="application/json"
    )


def _one_event(since: int, role: str, result: str, ignore: tuple[str, ...] = ()) -> AuditEvent:
    """The one event the role's action left (system parts' own events and the actions in
    `ignore`, which the action set off, aside)."""
    events = AuditEvent.objects.filter(id__gt=since).exclude(action__in=ignore)
    events = [e for e in events if e.actor_name.startswith(ROLES)]
    assert len(events) == 1, [(e.actor_name, e.action, e.result) for e in events]
    assert events[0].actor_name.startswith(role) and events[0].result == result, events[0]
    return events[0]


def _last_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


# What each role may do, by action: None = refused by the policy (403).
EXPECTED = {
    "pause": {"viewer": None, "operator": 200, "approver": None, "admin": 200},
    "promote": {"viewer": None, "operator": 202, "approver": None, "admin": 200},
    "failover": {"viewer": None, "operator": 202, "approver": None, "admin": 200},
    "delete": {"viewer": None, "operator": 202, "approver": None, "admin": 204},
}


@pytest.mark.parametrize("role", ROLES)
def test_the_api_allows_and_refuses_exactly_what_the_policy_says(role, api, mirror_of):
    client = api(role)
    for action, by_role in EXPECTED.items():
        mirror = mirror_of(action)
        since = _last_id()
        body = {"mirror_topic_names": [mirror.mirror_topic], "reason": "planned migration"}
        if action == "delete":
            response = client.delete(_url(mirror, "")[:-1] + "?force=true&reason=retire+it")
        else:
            response = _post(client, _url(mirror, f"mirrors:{action}"), body)
        expected = by_role[role]
        assert response.status_code == (expected or 403), (action, response.content)
        # a forced deletion fails the mirrors over first: audited on its own
        ignore = ("mirror.failover",) if action == "delete" else ()
        _one_event(since, role, "ok" if expected else "refused", ignore)
        if expected == 202:
            request = response.json()["approval_request"]
            assert request["state"] == "PENDING" and request["requester"].startswith(role)
            assert _state(mirror) != MirrorTopic.State.STOPPED
        if expected == 200 and action in ("promote", "failover"):
            [outcome] = response.json()["data"]
            assert outcome["error_code"] is None and outcome["mirror_lags"][0]["lag"] == 0


def _state(mirror: MirrorTopic) -> str:
    found = MirrorTopic.objects.filter(pk=mirror.pk).first()
    return found.state if found else "DELETED"


@pytest.mark.parametrize("role", ROLES)
def test_only_approvers_and_admins_approve_and_never_their_own_request(role, api, users, mirror_of):
    mirror = mirror_of("approve")
    asked = _post(
        api("operator"),
        _url(mirror, "mirrors:promote"),
        {"mirror_topic_names": [mirror.mirror_topic], "reason": "cut over"},
    )
    request_id = asked.json()["approval_request"]["id"]
    approve = (
        f"/kafka/v3/clusters/{mirror.destination.cluster_id}/approval-requests/{request_id}:approve"
    )
    since = _last_id()
    response = _post(api(role), approve)
    if role in ("approver", "admin"):
        assert response.status_code == 200, response.content
        _one_event(since, role, "ok")
    else:
        assert response.status_code == 403
        _one_event(since, role, "refused")


def test_an_admin_who_asked_cannot_approve_their_own_request(api, mirror_of):
    mirror = mirror_of("own")
    ClusterLink.objects.filter(pk=mirror.link_id).update(admin_may_override=False)
    asked = _post(
        api("admin"),
        _url(mirror, "mirrors:failover"),
        {"mirror_topic_names": [mirror.mirror_topic], "reason": "drill"},
    )
    assert asked.status_code == 202, asked.content
    request_id = asked.json()["approval_request"]["id"]
    cluster_id = mirror.destination.cluster_id
    since = _last_id()
    response = _post(
        api("admin"), f"/kafka/v3/clusters/{cluster_id}/approval-requests/{request_id}:approve"
    )
    assert response.status_code == 403
    assert "someone else must approve it" in response.json()["message"]
    _one_event(since, "admin", "refused")
    assert ApprovalRequest.objects.get(pk=request_id).state == "PENDING"


def test_an_expired_or_withdrawn_request_cannot_be_approved(users, mirror_of):
    operator = audit.Actor(user=users["operator"], name="operator")
    approver = audit.Actor(user=users["approver"], name="approver")
    mirror = mirror_of("shut")
    submission = approvals.submit(operator, mirror.link, "promote", [mirror.mirror_topic], "why")
    withdrawn = approvals.withdraw(operator, submission.request)
    assert withdrawn.state == ApprovalRequest.State.WITHDRAWN
    with pytest.raises(Exception, match="is WITHDRAWN; it cannot be approved"):
        approvals.approve(approver, withdrawn)

    submission = approvals.submit(operator, mirror.link, "promote", [mirror.mirror_topic], "why")
    ApprovalRequest.objects.filter(pk=submission.request.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(Exception, match="is EXPIRED; it cannot be approved"):
        approvals.approve(approver, approvals.get_request(submission.request.pk))
    assert _state(mirror) == MirrorTopic.State.LINK_PAUSED
    with pytest.raises(Exception, match="Only the person who asked"):
        approvals.withdraw(approver, submission.request)


def test_a_request_needs_a_reason_and_a_promote_that_could_not_run_is_not_requested(
    users, mirror_of, make_topic
):
    operator = audit.Actor(user=users["operator"], name="operator")
    mirror = mirror_of("reason")
    with pytest.raises(Exception, match="Give a reason"):
        approvals.submit(operator, mirror.link, "promote", [mirror.mirror_topic], "  ")
    with pytest.raises(Exception, match="is not a mirror topic"):
        approvals.submit(operator, mirror.link, "promote", ["nope"], "why")
    assert not ApprovalRequest.objects.exists()


def test_the_console_allows_and_refuses_exactly_what_the_policy_says(client_as, mirror_of):
    for role in ROLES:
        client = client_as(role)
        for action, url_name in (("pause", "pause"), ("promote", "promote")):
            mirror = mirror_of(f"{role}-{action}")
            since = _last_id()
            response = client.post(
                f"/mirrors/{mirror.destination.name}/{mirror.mirror_topic}/{url_name}/",
                {"reason": "console test"},
            )
            allowed = EXPECTED[action][role]
            assert response.status_code == (302 if allowed else 403), (role, action)
            _one_event(since, role, "ok" if allowed else "refused")
            if allowed and action == "promote":
                if role == "admin":
                    assert _state(mirror) in ("PENDING_STOPPED", "STOPPED")
                else:
                    assert "/approvals/" in response["Location"]


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
    deadline = time.monotonic() + 60
    while (state := ApprovalRequest.objects.get(pk=request_id).state) == "APPROVED":
        assert time.monotonic() < deadline, "the approved request did not finish"
        time.sleep(0.5)
    found = api("viewer").get(base).json()
    assert state == "EXECUTED", found
    assert found["approved_by"][0].startswith("approver")
    assert found["result"][0]["state"] == "STOPPED"
    assert _state(mirror) == "STOPPED"
    event = AuditEvent.objects.get(action="mirror.promote", result="ok")
    assert event.actor_name.startswith("operator") and "approved by approver" in event.actor_name
    assert ClusterLink.objects.filter(pk=mirror.link_id).exists()
