"""Approvals act only with live authority and never on a target that changed (issue 23,
items 2 and 5): a request whose requester was disabled or lost the role, or whose mirror or
link changed (break glass, pause, deletion), ends as SUPERSEDED, says by what, and approving it
answers 409; approve and reject racing have one winner; a dry run checks what the real call
checks; a query parameter given twice is refused.

Links here are paused and their mirrors' sources empty (lag 0 without a stream), as in
test_approvals.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.urls import reverse

from replication.actions import approvals, request_runs
from replication.cutover import link_deletion
from replication.governance import audit
from replication.governance import users as accounts
from replication.governance.tokens import create_token
from replication.models import ApprovalRequest, AuditEvent, ClusterLink, MirrorTopic
from replication.topics import mirrors

SUPERSEDED = ApprovalRequest.State.SUPERSEDED


@pytest.fixture
def actors(users):
    return {role: audit.Actor(user=user, name=role) for role, user in users.items()}


def _ask(actors, mirror: MirrorTopic, action: str = "promote") -> ApprovalRequest:
    submission = approvals.submit(
        actors["operator"], mirror.link, action, [mirror.mirror_topic], "cut over"
    )
    assert submission.request is not None
    return submission.request


def _approve_by_api(api, request: ApprovalRequest):
    url = (
        f"/kafka/v3/clusters/{request.destination.cluster_id}/approval-requests/"
        f"{request.pk}:approve"
    )
    return api("approver").post(url, content_type="application/json")


def _state(mirror: MirrorTopic) -> str:
    return MirrorTopic.objects.get(pk=mirror.pk).state


@pytest.mark.parametrize("change", ["disabled", "made a viewer", "deleted"])
def test_a_request_whose_requester_lost_their_authority_is_not_run_when_approved(
    api, actors, users, mirror_of, change
):
    mirror = mirror_of("authority")
    request = _ask(actors, mirror)
    operator = users["operator"]
    if change == "disabled":
        accounts.disable(actors["admin"], operator)
    elif change == "made a viewer":
        accounts.set_role(actors["admin"], operator, "viewer")
    else:
        operator.delete()

    answer = _approve_by_api(api, request)

    assert answer.status_code == 409, answer.content
    message = answer.json()["message"]
    assert "superseded" in message and "operator" in message
    request.refresh_from_db()
    assert request.state == SUPERSEDED
    assert not request.approvals.exists()
    assert _state(mirror) == MirrorTopic.State.LINK_PAUSED  # nothing ran
    assert not AuditEvent.objects.filter(action="mirror.promote").exists()
    assert AuditEvent.objects.filter(action="request.supersede").count() == 1


def test_an_approved_request_is_not_run_once_its_requester_is_disabled(actors, mirror_of):
    mirror = mirror_of("run-late")
    request = _ask(actors, mirror)
    approvals.approve(actors["approver"], request)
    assert request.state == ApprovalRequest.State.APPROVED
    accounts.disable(actors["admin"], actors["operator"].user)

    request_runs.execute(approvals.get_request(request.pk))

    request.refresh_from_db()
    assert request.state == SUPERSEDED and "was disabled" in request.decision_reason
    assert _state(mirror) == MirrorTopic.State.LINK_PAUSED


def test_break_glass_supersedes_a_pending_failover_of_the_same_mirror(
    api, actors, mirror_of, client_as
):
    mirror = mirror_of("glass")
    request = _ask(actors, mirror, "failover")
    approvals.submit(
        actors["admin"],
        mirror.link,
        "failover",
        [mirror.mirror_topic],
        "datacenter on fire",
        break_glass=True,
    )
    request.refresh_from_db()
    assert request.state == SUPERSEDED
    assert "admin failed over" in request.decision_reason
    assert "break glass" in request.decision_reason

    answer = _approve_by_api(api, request)
    assert answer.status_code == 409 and "superseded" in answer.json()["message"]
    # The requester sees why; the mirror no longer says it waits for approval.
    page = client_as("operator").get(reverse("approval-detail", args=[request.pk]))
    assert "admin failed over" in page.content.decode()
    mirror_page = client_as("operator").get(
        reverse("mirror-detail", args=["destination", mirror.mirror_topic])
    )
    assert "waits for approval" not in mirror_page.content.decode()
    assert request.approvals.count() == 0


def test_pausing_or_deleting_the_mirror_supersedes_requests_on_it(actors, mirror_of):
    paused = mirror_of("paused")
    asked = _ask(actors, paused)
    mirrors.pause_mirror(actors["operator"], paused)
    asked.refresh_from_db()
    assert asked.state == SUPERSEDED and "paused" in asked.decision_reason

    deleted = mirror_of("deleted")
    asked = _ask(actors, deleted)
    other = mirror_of("other")  # a request on another mirror is left alone
    untouched = _ask(actors, other)
    mirrors.delete_mirror(actors["admin"], deleted)
    asked.refresh_from_db()
    untouched.refresh_from_db()
    assert asked.state == SUPERSEDED and "deleted" in asked.decision_reason
    assert untouched.state == ApprovalRequest.State.PENDING


def test_another_executed_request_supersedes_a_pending_one_on_the_same_mirror(actors, mirror_of):
    mirror = mirror_of("twice")
    first = _ask(actors, mirror)
    second = _ask(actors, mirror, "failover")
    approvals.approve(actors["approver"], first)
    request_runs.execute(approvals.get_request(first.pk))
    second.refresh_from_db()
    assert second.state == SUPERSEDED and "promoted" in second.decision_reason
    with pytest.raises(Exception, match="superseded"):
        approvals.approve(actors["admin"], second)


def test_deleting_the_link_supersedes_its_pending_requests_and_approving_answers_409(
    api, actors, mirror_of
):
    mirror = mirror_of("link-gone")
    promote_request = _ask(actors, mirror)
    delete_request = approvals.submit(
        actors["operator"], mirror.link, "delete-link", reason="retire", force=True
    ).request
    link = mirror.link
    link_deletion.delete_link(actors["admin"], link, force=True)
    assert not ClusterLink.objects.filter(pk=link.pk).exists()
    promote_request.refresh_from_db()
    delete_request.refresh_from_db()
    # Forcing failed the mirror over first; then the link went.
    assert promote_request.state == SUPERSEDED
    assert "admin failed over" in promote_request.decision_reason
    assert delete_request.state == SUPERSEDED
    assert "admin deleted link" in delete_request.decision_reason

    answers = [_approve_by_api(api, r) for r in (promote_request, delete_request)]
    assert [a.status_code for a in answers] == [409, 409]
    # Each says the link was deleted, not only that the mirror was failed over (issue 47),
    # and says it once.
    promoting, deleting = (a.json()["message"] for a in answers)
    assert "failed over" in promoting and f"Link {link.name} was deleted since" in promoting
    assert f"deleted link {link.name}" in deleting and "was deleted since" not in deleting


def _call(url: str, token: str, body: dict) -> int:
    request = urllib.request.Request(  # noqa: S310 - the test server's own URL
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_approve_and_reject_racing_on_one_request_have_exactly_one_winner(
    live_server, users, actors, mirror_of
):
    _, approver = create_token(audit.Actor.system("tests"), users["approver"], "race-a")
    _, admin = create_token(audit.Actor.system("tests"), users["admin"], "race-r")
    mirror = mirror_of("race")
    for _ in range(4):
        request = _ask(actors, mirror)
        base = (
            f"{live_server.url}/kafka/v3/clusters/{mirror.destination.cluster_id}/"
            f"approval-requests/{request.pk}"
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            approve = pool.submit(_call, f"{base}:approve", approver, {})
            reject = pool.submit(_call, f"{base}:reject", admin, {"reason": "no"})
            answers = {"approve": approve.result(), "reject": reject.result()}
        assert sorted(answers.values()) == [200, 409], answers
        request.refresh_from_db()
        winner = "approve" if answers["approve"] == 200 else "reject"
        assert request.state == ("APPROVED" if winner == "approve" else "REJECTED")
        ok = AuditEvent.objects.filter(target=f"request {request.pk}", result="ok")
        assert {e.action for e in ok} == {f"request.{winner}"}
        if winner == "approve":  # run it no further: the next round asks again
            break


@pytest.mark.parametrize(
    "role,reason,expected",
    [
        ("operator", "x" * 5000, "more than 2000"),
        ("admin", "x" * 100_000, "more than 2000"),
        ("operator", "ok\x1b]0;owned\x07\x1b[2J", "control characters"),
    ],
)
def test_a_dry_run_and_an_admin_override_check_the_reason_as_the_real_call_does(
    api, mirror_of, role, reason, expected
):
    mirror = mirror_of("dry")
    base = (
        f"/kafka/v3/clusters/{mirror.destination.cluster_id}/links/{mirror.link.name}/"
        "mirrors:promote"
    )
    body = json.dumps({"mirror_topic_names": [mirror.mirror_topic], "reason": reason})
    for query in ("?validate_only=true", ""):
        answer = api(role).post(base + query, body, content_type="application/json")
        assert answer.status_code == 400, answer.content
        assert expected in answer.json()["message"]
    assert _state(mirror) == MirrorTopic.State.LINK_PAUSED
    assert not ApprovalRequest.objects.exists()


def test_a_query_parameter_given_twice_is_refused_not_last_wins(api, mirror_of):
    mirror = mirror_of("twice-param")
    url = (
        f"/kafka/v3/clusters/{mirror.destination.cluster_id}/links/{mirror.link.name}/"
        "mirrors:promote?validate_only=true&validate_only=false"
    )
    body = json.dumps({"mirror_topic_names": [mirror.mirror_topic], "reason": "drill"})
    answer = api("admin").post(url, body, content_type="application/json")
    assert answer.status_code == 400
    assert "validate_only is given more than once" in answer.json()["message"]
    assert _state(mirror) == MirrorTopic.State.LINK_PAUSED


def test_a_request_naming_too_many_topics_is_refused_at_once(api, mirror_of):
    mirror = mirror_of("many")
    url = (
        f"/kafka/v3/clusters/{mirror.destination.cluster_id}/links/{mirror.link.name}/"
        "mirrors:promote"
    )
    names = [f"t{i}" for i in range(approvals.MAX_TOPICS + 1)]
    body = json.dumps({"mirror_topic_names": names, "reason": "all"})
    answer = api("operator").post(url, body, content_type="application/json")
    assert answer.status_code == 400
    assert f"at most {approvals.MAX_TOPICS}" in answer.json()["message"]
    assert len(answer.content) < 2000
    assert not ApprovalRequest.objects.exists()
