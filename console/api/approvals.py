"""Approval requests on the API: …/clusters/{cluster_id}/approval-requests[/{id}[:action]], and
the answer every action that may need approval gives (promote, failover, link deletion)."""

from __future__ import annotations

from django.urls import reverse

from console.api import schemas
from console.api.base import ApiError, cluster, endpoint, field, json_body, self_url
from console.api.schemas import respond
from console.object_urls import with_urls
from replication.actions import approvals, live_plans
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ApprovalRequest

BASE = "/kafka/v3/clusters/{cluster_id}/approval-requests"


def _plan(request, plan: dict) -> schemas.RequestPlan:
    return schemas.RequestPlan(**with_urls(plan, request.build_absolute_uri))


def request_data(request, found: ApprovalRequest, *, live: bool = False) -> schemas.ApprovalRequest:
    """The request as the API answers it; `live` (its own GET) adds the plan read now."""
    now, now_error = None, ""
    if live and found.state == ApprovalRequest.State.PENDING:
        try:
            now = _plan(request, dict(live_plans.plan_now(found)))
        except ReplicationError as exc:
            now_error = str(exc)
    return schemas.ApprovalRequest(
        metadata=self_url(
            request, f"{BASE.format(cluster_id=found.destination.cluster_id)}/{found.pk}"
        ),
        id=found.pk,
        action=found.action,
        link_name=found.link_name,
        mirror_topic_names=found.topics,
        force=found.force,
        merge_flow=found.params if "flow" in found.params else None,  # a merge flow's request
        schema_subjects=found.params.get("subjects") if found.params else None,
        reason=found.reason,
        requester=found.requester_name,
        state=found.state,
        approvals_required=found.approvals_required,
        approved_by=[a.approver_name for a in found.approvals.all()],
        created_at=found.created_at,
        expires_at=found.expires_at,
        decided_by=found.decided_by,
        decision_reason=found.decision_reason,
        progress=found.progress,
        plan=[schemas.RequestTopicOutcome(**entry) for entry in found.plan],
        plan_at_request=_plan(request, found.plan_at_request) if found.plan_at_request else None,
        plan_now=now,
        plan_now_error=now_error,
        result=[schemas.RequestTopicOutcome(**entry) for entry in found.result],
        console_url=request.build_absolute_uri(reverse("approval-detail", args=[found.pk])),
    )


def submitted(
    request, kind: str, submission: approvals.Submission, data: list[schemas.StopMirrorData]
):
    """200 with each topic's outcome when the action ran (or was validated); 202 with the
    approval request when it waits for approval."""
    body = schemas.StopMirrorsResult(
        kind=kind,
        metadata=self_url(request, request.path),
        data=data,
        approval_request=request_data(request, submission.request) if submission.request else None,
        approvals_needed=submission.approvals_needed,
        note=submission.note,
    )
    return respond(body, status=202 if submission.request else 200)


def _found(cluster_id: str, request_id: str) -> ApprovalRequest:
    found = approvals.get_request(request_id)
    if found.destination_id != cluster(cluster_id).pk:
        raise ApiError(404, f"There is no approval request {request_id} on this cluster.")
    return found


@endpoint(GET="console.view")
def request_list(request, cluster_id):
    states = [s for s in request.GET.get("state", "").split(",") if s]
    unknown = set(states) - set(ApprovalRequest.State.values)
    if unknown:
        raise ApiError(
            400,
            f"Unknown state {', '.join(sorted(unknown))}. "
            f"Use: {', '.join(ApprovalRequest.State.values)}.",
        )
    found = approvals.list_requests(states=states).filter(destination=cluster(cluster_id))
    return respond(
        schemas.ApprovalRequestList(
            metadata=self_url(request, request.path),
            data=[request_data(request, r) for r in found[:500]],
        )
    )


@endpoint(GET="console.view")
def request_detail(request, cluster_id, request_id):
    return respond(request_data(request, _found(cluster_id, request_id), live=True))


@endpoint(POST="request.approve")
def request_approve(request, cluster_id, request_id):
    found = approvals.approve(audit.Actor.from_request(request), _found(cluster_id, request_id))
    return respond(request_data(request, found))


@endpoint(POST="request.approve")
def request_reject(request, cluster_id, request_id):
    reason = field(json_body(request), "reason", str, default="")
    found = approvals.reject(
        audit.Actor.from_request(request), _found(cluster_id, request_id), reason
    )
    return respond(request_data(request, found))


@endpoint(POST="mirror.stop")
def request_withdraw(request, cluster_id, request_id):
    found = approvals.withdraw(audit.Actor.from_request(request), _found(cluster_id, request_id))
    return respond(request_data(request, found))
