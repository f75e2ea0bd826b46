"""An approval request's life once it is asked: its own state change (`move`, which tells the
requester) and what the audit trail keeps of it; running an approved request as its requester
(`execute`) and settling it once its cutover's mirrors are no longer under way (`settle`, from
`finish_stops`, which moves each cutover module's stored steps on); and ending a pending request
that expired or went stale (`settle_due`, `settle_all_due`). Asking, approving, rejecting and
withdrawing are `approvals`'s.
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from replication.actions import gateway_moves
from replication.actions.operations import OPERATIONS, Asked
from replication.core.errors import ReplicationError
from replication.cutover import promote
from replication.governance import audit, notifications, policy, stale_requests
from replication.models import ApprovalRequest, ClusterLink, Gateway, GatewayMove, MirrorTopic

RState = ApprovalRequest.State


def asked_of(request: ApprovalRequest) -> Asked:
    """The action as `request` keeps it, on its link (which the caller checked is there)."""
    assert request.link is not None  # for the type checker
    return Asked(request.link, request.action, request.topics, request.params, request.force)


def snapshot(request: ApprovalRequest) -> dict:
    return {
        "id": request.pk,
        "action": request.action,
        "link": request.link_name,
        "topics": request.topics,
        **OPERATIONS[request.action].recorded(request.params),
        "state": request.state,
        "approvals": [a.approver_name for a in request.approvals.all()] if request.pk else [],
        "approvals_required": request.approvals_required,
    }


def move(request: ApprovalRequest, sources: list[str], to: str, **fields) -> bool:
    """A conditional state change of a request; False if it was no longer in `sources`."""
    now = timezone.now()
    changed = ApprovalRequest.objects.filter(pk=request.pk, state__in=sources).update(
        state=to, state_time=now, **fields
    )
    if changed:
        request.state, request.state_time = to, now
        for name, value in fields.items():
            setattr(request, name, value)
        notifications.tell_requester(request)
    else:
        request.refresh_from_db()
    return bool(changed)


def settle_due(request: ApprovalRequest) -> None:
    """Expire the request if it is due, supersede it if it went stale (each kept whatever the
    caller does next)."""
    _expire_if_due(request)
    if request.state == RState.PENDING and (why := stale_reason(request)):
        stale_requests.end(request, why, [RState.PENDING])


def stale_reason(request: ApprovalRequest) -> str:
    """Why the request can no longer run as asked ("" if it can): its link is gone, or its
    requester no longer has the authority to ask for it (disabled, deleted, another role).
    `request` as just read, with its requester (a deleted link or user is NULL there)."""
    if request.link_id is None:
        return f"link {request.link_name} was deleted"
    user = request.requester
    if user is None:
        return f"the account of {request.requester_name}, who asked, was deleted"
    if not user.is_active:
        return f"{request.requester_name}, who asked, was disabled"
    if not policy.can(user, OPERATIONS[request.action].requested_as):
        return f"{request.requester_name}, who asked, no longer has a role that may ask for it"
    if gateway := request.params.get("gateway"):
        if not policy.can(user, gateway_moves.MANAGE):
            return f"{request.requester_name}, who asked, may no longer move a gateway's clients"
        if not Gateway.objects.filter(name=gateway).exists():
            return f"gateway {gateway}, whose clients it moves, was deleted"
    return ""


def _expire_if_due(request: ApprovalRequest) -> None:
    due = request.state == RState.PENDING and request.expires_at <= timezone.now()
    if due and move(request, [RState.PENDING], RState.EXPIRED):
        audit.record(
            audit.Actor.system("approvals"),
            "request.expire",
            f"request {request.pk}",
            after=snapshot(request),
        )


def settle_all_due() -> None:
    """Expire or supersede each pending request that is due: one read of them all, with their
    requesters and roles (the overview and the approvals list call this on every view)."""
    pending = ApprovalRequest.objects.filter(state=RState.PENDING).select_related("requester")
    for request in pending.prefetch_related("requester__groups"):
        settle_due(request)


def execute(request: ApprovalRequest) -> None:
    """Run an approved request as its requester, naming the approvers in the audit trail."""
    if request.state != RState.APPROVED:
        return
    approvers = ", ".join(a.approver_name for a in request.approvals.all())
    actor = audit.Actor(
        user=request.requester,
        name=f"{request.requester_name} (approved by {approvers})"[:150],
    )
    note = f"Request {request.pk}, approved by {approvers}. Reason: {request.reason}"
    # Run only with the requester's live authority, on a link that is still there.
    why = stale_reason(request)
    if why:
        stale_requests.end(request, why, [RState.APPROVED])
        return
    operation = OPERATIONS[request.action]
    try:
        asked = asked_of(request)
        ran = gateway_moves.cut_over(
            actor, asked, lambda: operation.run(actor, asked, note, False), request
        )
        if not operation.done_states:  # done when it returns
            _finish(request, RState.EXECUTED, [], ran.done)
            return
    except ReplicationError as exc:
        _finish(request, RState.FAILED, [], str(exc))
        return
    request.result = [o.as_dict() for o in ran.outcomes]
    ApprovalRequest.objects.filter(pk=request.pk).update(
        result=request.result, progress="Waiting for the link's stream to stop writing"
    )
    settle(request)


def settle(request: ApprovalRequest) -> None:
    """An approved cutover is done once none of its topics is under way (promote.UNDER_WAY)."""
    if request.state != RState.APPROVED or not request.result:
        return
    started = [r["mirror_topic"] for r in request.result if not r["error"]]
    now = {
        name: (state, error)
        for name, state, error in MirrorTopic.objects.filter(
            destination=request.destination, mirror_topic__in=started
        ).values_list("mirror_topic", "state", "action_error")
    }
    if any(state in promote.UNDER_WAY for state, _ in now.values()):
        return
    if request.link is not None:  # its move, if it names a gateway, made first
        gateway_moves.finish(request.link)
    operation = OPERATIONS[request.action]
    wanted = operation.done_states
    result = []
    for entry in request.result:
        name = entry["mirror_topic"]
        state, error = now.get(name, (entry["state"], "It was given up; see the audit trail."))
        error = entry["error"] or ("" if state in wanted else error)
        result.append({**entry, "state": state, "error": error or ""})
    done = [r["mirror_topic"] for r in result if r["state"] in wanted]
    moved, words = gateway_moves.outcome(request)
    _finish(
        request,
        RState.EXECUTED if len(done) == len(result) and moved else RState.FAILED,
        result,
        " ".join(filter(None, [f"{operation.done_word}: {', '.join(done) or 'none'}.", words])),
    )


def finish_stops(link: ClusterLink) -> bool:
    """Finish the link's promotes and failovers whose writer stopped, and the approved requests
    they settle. Returns whether some mirror of the link still waits to stop."""
    # Each cutover module's finish, once, in the table's order.
    finishes = [op.finish for op in OPERATIONS.values() if op.finish is not None]
    for finish in dict.fromkeys(finishes):
        finish(link)
    gateway_moves.finish(link)  # at once: a cutover of no request has none to settle
    for request in link.approval_requests.filter(state=RState.APPROVED):
        settle(request)
    return link.mirrors.filter(state__in=promote.UNDER_WAY).exists()


def finish_all_stops() -> None:
    """The same for every link with a mirror waiting to stop or a gateway move waiting for its
    cutover (the supervisor's backstop, for a stop whose own task was lost with its worker)."""
    pending = ClusterLink.objects.filter(
        Q(mirrors__state__in=promote.UNDER_WAY) | Q(gateway_moves__state=GatewayMove.State.WAITING)
    )
    for link in pending.distinct():
        finish_stops(link)


def _finish(request: ApprovalRequest, state: str, result: list, progress: str) -> None:
    if move(
        request,
        [RState.APPROVED],
        state,
        result=result or request.result,
        progress=progress[:400],
    ):
        audit.record(
            audit.Actor.system("approvals"),
            "request.done",
            f"request {request.pk}",
            result=audit.AuditEvent.Result.OK
            if state == RState.EXECUTED
            else audit.AuditEvent.Result.FAILED,
            after=snapshot(request),
            message=progress,
        )
