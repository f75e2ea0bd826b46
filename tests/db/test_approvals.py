"""Role-gated approvals of promote, failover, link deletion and merge flows, on in-memory
clusters: the requester never approving their own request, expired and withdrawn requests
staying shut, a request needing a reason. Who may do what, through every interface, is
test_role_matrix.py; an approved request run by the Celery worker is
tests/integration/test_approvals.py."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from replication.actions import approvals
from replication.governance import audit
from replication.models import ApprovalRequest, AuditEvent, ClusterLink, MirrorTopic

ROLES = ("viewer", "operator", "approver", "admin")


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


def _state(mirror: MirrorTopic) -> str:
    found = MirrorTopic.objects.filter(pk=mirror.pk).first()
    return found.state if found else "DELETED"


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


def test_the_failover_form_tells_an_admin_override_from_break_glass(mirror_of, client_as):
    mirror = mirror_of("glass")
    link = mirror.link
    link.approvals_required, link.admin_may_override = 1, False
    link.save(update_fields=["approvals_required", "admin_may_override"])
    url = reverse("mirror-failover", args=[mirror.destination.name, mirror.mirror_topic])
    admin = client_as("admin")

    strict = admin.get(url).content.decode()
    assert "lets no admin override it, but breaking glass fails over at once" in strict
    assert "flagged in red on the mirror and in the audit trail" in strict
    assert 'id="acts-at-once-hint"' not in strict  # it waits for approval

    link.admin_may_override = True
    link.save(update_fields=["admin_may_override"])
    lenient = admin.get(url).content.decode()
    assert "records it as an admin override, with no approver" in lenient
    assert "Not needed to act at once here" in lenient
