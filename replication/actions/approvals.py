"""Approvals for the actions people fear: promote, failover, deleting a link, creating or
deleting a merge flow (records start or stop arriving in a topic consumers read; pausing and
resuming one delay them only, so those act at once, as a mirror's pause does), and making
synced schema subjects writable on the destination (its producers may then register there).

An operator asks, with a reason; the request runs once enough approvers other than the
requester said yes (the link's policy: 0-3 approvals, default 1). It can be rejected with a
reason, withdrawn by its requester, and it expires. An admin acts at once where the link's
policy allows it (an override) and may break glass on a failover whatever the policy. Every
step is audited. What differs by action (its dry run, how it runs and settles) is looked up in
operations.OPERATIONS. Running an approved request, settling it and ending one that expired or
went stale are `request_runs`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from replication.actions import gateway_moves, plans
from replication.actions.operations import OPERATIONS, Asked
from replication.actions.request_runs import asked_of, move, settle_all_due, settle_due, snapshot
from replication.core import text
from replication.core.errors import ReplicationError, conflict, not_found
from replication.cutover import promote
from replication.governance import audit, policy
from replication.models import Approval, ApprovalRequest, ClusterLink

log = logging.getLogger(__name__)

Action = ApprovalRequest.Action
RState = ApprovalRequest.State
MAX_REASON = 2000
# Mirror topics one request may name: a bound on the work (and the answer) one call makes.
MAX_TOPICS = 1000


@dataclass
class Submission:
    """What came of asking for an action: it ran (or, validating, would run) at once, with
    each topic's outcome, or it waits for approval in `request`."""

    outcomes: list[promote.TopicOutcome] = field(default_factory=list)
    request: ApprovalRequest | None = None
    approvals_needed: int = 0
    note: str = ""


def _reason(reason: str | None, what: str, *, required: bool = True) -> str:
    """The reason, checked as every path takes it (a dry run too): given where `required`, at
    most MAX_REASON characters, no control characters."""
    reason = (reason or "").strip()
    if not reason and required:
        raise ReplicationError(
            f"Give a reason for {what}: the approvers and the audit trail read it."
        )
    if len(reason) > MAX_REASON:
        raise ReplicationError(
            f"The reason has {len(reason)} characters, more than {MAX_REASON}; shorten it. "
            "Nothing was changed."
        )
    return text.plain(reason, "reason", multiline=True)


def submit(
    actor: audit.Actor,
    link: ClusterLink,
    action: str,
    topics: Sequence[str] = (),
    reason: str = "",
    *,
    force: bool = False,
    break_glass: bool = False,
    validate_only: bool = False,
    params: dict | None = None,
) -> Submission:
    """Promote or fail over `topics` of `link`, delete `link` (with `force`, failing its
    mirrors over), or create or delete the merge flow `params` names: at once where the actor
    may act without approval, else as a request.

    Acting at once: the link's policy needs no approval, or the actor is an admin and the
    policy allows an admin override, or an admin breaks glass on a failover (with a reason)."""
    if action not in Action.values:
        raise ReplicationError(f"Unknown action {action!r}; use one of {', '.join(Action.values)}.")
    operation = OPERATIONS[action]
    asked = Asked(
        link,
        action,
        [] if operation.takes_params else list(dict.fromkeys(topics)),
        operation.params(link, params or {}),
        force,
    )
    topics, params = asked.topics, asked.params
    target = operation.target(asked)
    with audit.refusals(actor, f"request.{action}", target):
        if operation.names_mirrors and not topics:
            raise ReplicationError("Name at least one mirror topic.")
        if len(topics) > MAX_TOPICS:
            raise ReplicationError(
                f"{len(topics)} mirror topics named: one request takes at most {MAX_TOPICS}. "
                "Split them over several. Nothing was changed."
            )
        # Checked alike whether it runs now, waits for approval or is only validated.
        reason = _reason(reason, "breaking glass", required=break_glass)
        gateway_moves.check(actor, asked)
        needed = link.approvals_required
        note = _acting_at_once(actor, link, action, reason, break_glass)
        if note:
            submission = Submission(approvals_needed=0, note=note)
            if validate_only:
                submission.outcomes = operation.run(actor, asked, note, True).outcomes
            else:
                submission.outcomes = gateway_moves.cut_over(
                    actor, asked, lambda: operation.run(actor, asked, note, False)
                ).outcomes
            return submission
        # The action waits for approval: check now that it could run, and say what it would do.
        if operation.validated_by_running:
            operation.run(actor, asked, "", True)
        outcomes = operation.plan(asked)
        refused = [o for o in outcomes if o.error and operation.plan_errors_refuse]
        if refused:
            raise ReplicationError(" ".join(o.error for o in refused), refused[0].status)
        submission = Submission(outcomes, approvals_needed=needed)
        reason = _reason(reason, "the request")
        if validate_only:
            return submission
        # Made before the transaction: it reads the clusters (consumer groups, end offsets).
        plan = plans.build(asked, outcomes)
        with transaction.atomic():
            # The link's row locked: deleted meanwhile (by an admin acting at once, say), the
            # request is refused clearly instead of failing on its missing link.
            if not ClusterLink.objects.select_for_update().filter(pk=link.pk).exists():
                raise not_found(f"Cluster link {link.name!r} was deleted meanwhile.")
            request = ApprovalRequest.objects.create(
                link=link,
                link_name=link.name,
                destination=link.destination,
                action=action,
                topics=topics,
                params=params,
                reason=reason,
                requester=actor.user,
                requester_name=actor.name,
                approvals_required=needed,
                expires_at=timezone.now() + timedelta(seconds=settings.APPROVAL_REQUEST_TTL_S),
                force=force,
                plan=[o.as_dict() for o in outcomes],
                plan_at_request=plan,
            )
        submission.request = request
    audit.record(actor, f"request.{action}", target, after=snapshot(request), message=reason)
    log.info("%s asked to %s on link %s (request %d)", actor.name, action, link.name, request.pk)
    return submission


def _acting_at_once(
    actor: audit.Actor, link: ClusterLink, action: str, reason: str, break_glass: bool
) -> str:
    """Why the action runs without approval (the audit trail's note), or "" if it waits: an
    admin breaking glass on a failover, or `acts_at_once`."""
    if break_glass:
        if not OPERATIONS[action].break_glass:
            raise ReplicationError("Break glass is for a failover only.")
        if not policy.can(actor.user, "request.override"):
            raise ReplicationError("Only an admin may break glass.", 403)
        return f"{audit.BREAK_GLASS}{reason}"
    if not acts_at_once(actor.user, link):
        return ""
    why = (
        "No approval needed by the link's policy."
        if link.approvals_required == 0
        else "Admin override: acted without approval."
    )
    return why + (f" Reason: {reason}" if reason else "")


def acts_at_once(user, link: ClusterLink) -> bool:
    """Whether `user`'s promote, failover or deletion of `link` runs without approval: the
    link's policy needs none, or the user is an admin and the policy allows an override."""
    return link.approvals_required == 0 or (
        link.admin_may_override and policy.can(user, "request.override")
    )


def plan_now(request: ApprovalRequest) -> plans.Plan:
    """A pending request's plan as things stand now, for its approvers to see beside the one
    made when it was asked (a refusal of the whole is raised)."""
    if request.link is None:
        raise not_found(f"Link {request.link_name} was deleted.")
    asked = asked_of(request)
    return plans.build(asked, OPERATIONS[request.action].plan(asked))


def preview(link: ClusterLink, action: str, topics: list[str]) -> list[promote.TopicOutcome]:
    """What a promote, failover, reverse or restore of `topics` would do now, per topic (a
    refusal of the whole, a one-way link for a reverse say, is raised)."""
    return OPERATIONS[action].plan(Asked(link, action, topics))


def get_request(pk: int | str) -> ApprovalRequest:
    try:
        request = ApprovalRequest.objects.select_related("link", "destination", "requester").get(
            pk=int(pk)
        )
    except (ValueError, TypeError, ApprovalRequest.DoesNotExist):
        raise not_found(
            f"There is no approval request {pk}. List the requests to see them."
        ) from None
    settle_due(request)
    return request


def list_requests(*, states: list[str] | None = None) -> QuerySet[ApprovalRequest]:
    settle_all_due()
    requests = ApprovalRequest.objects.select_related("link", "destination").prefetch_related(
        "approvals"
    )
    return requests.filter(state__in=states) if states else requests


def pending_count() -> int:
    return ApprovalRequest.objects.filter(
        state=RState.PENDING, expires_at__gt=timezone.now()
    ).count()


def _open_or_refuse(request: ApprovalRequest, verb: str) -> None:
    """Refused unless the request still waits. Call it inside a transaction: it reads the
    request afresh with its row locked (on SQLite the transaction holds the write lock), so of
    an approve and a reject racing exactly one wins."""
    fresh = ApprovalRequest.objects.select_for_update().get(pk=request.pk)
    request.state, request.decision_reason = fresh.state, fresh.decision_reason
    if request.state == RState.SUPERSEDED:
        gone = ""
        # A forced deletion fails the link's mirrors over first, which supersedes a request
        # on them as "failed over"; the approver must also learn the link itself is gone.
        deleted = f"deleted link {fresh.link_name}"
        if fresh.link_id is None and deleted not in request.decision_reason:
            gone = f" Link {fresh.link_name} was deleted since, with its mirrors' rows."
        raise conflict(
            f"Request {request.pk} was superseded: {request.decision_reason}.{gone} It cannot "
            f"be {verb} any more; ask again if it is still wanted."
        )
    if request.state != RState.PENDING:
        raise conflict(f"Request {request.pk} is {request.state}; it cannot be {verb} any more.")


def approve(actor: audit.Actor, request: ApprovalRequest) -> ApprovalRequest:
    """One approver says yes; with enough approvals the request runs (as a Celery task)."""
    target = f"request {request.pk}"
    with audit.refusals(actor, "request.approve", target):
        if not policy.can(actor.user, "request.approve"):
            raise ReplicationError("Only an approver or an admin may approve a request.", 403)
        if actor.user is not None and actor.user.pk == request.requester_id:
            raise ReplicationError(
                f"You asked for request {request.pk} yourself; someone else must approve it.",
                403,
            )
        settle_due(request)
        with transaction.atomic():
            _open_or_refuse(request, "approved")
            if request.approvals.filter(approver=actor.user).exists():
                raise conflict(f"You approved request {request.pk} already.")
            Approval.objects.create(request=request, approver=actor.user, approver_name=actor.name)
            if request.approvals.count() >= request.approvals_required:
                move(request, [RState.PENDING], RState.APPROVED, progress="Starting")
                transaction.on_commit(
                    lambda: current_app.send_task("replication.tasks.execute_request", [request.pk])
                )
    audit.record(actor, "request.approve", target, after=snapshot(request))
    return request


def reject(actor: audit.Actor, request: ApprovalRequest, reason: str) -> ApprovalRequest:
    target = f"request {request.pk}"
    with audit.refusals(actor, "request.reject", target):
        if not policy.can(actor.user, "request.approve"):
            raise ReplicationError("Only an approver or an admin may reject a request.", 403)
        why = _reason(reason, "rejecting")
        settle_due(request)
        with transaction.atomic():
            _open_or_refuse(request, "rejected")
            move(
                request,
                [RState.PENDING],
                RState.REJECTED,
                decided_by=actor.name,
                decision_reason=why,
            )
    audit.record(actor, "request.reject", target, after=snapshot(request), message=why)
    return request


def withdraw(actor: audit.Actor, request: ApprovalRequest) -> ApprovalRequest:
    target = f"request {request.pk}"
    with audit.refusals(actor, "request.withdraw", target):
        if actor.user is None or actor.user.pk != request.requester_id:
            raise ReplicationError("Only the person who asked may withdraw a request.", 403)
        settle_due(request)
        with transaction.atomic():
            _open_or_refuse(request, "withdrawn")
            move(request, [RState.PENDING], RState.WITHDRAWN, decided_by=actor.name)
    audit.record(actor, "request.withdraw", target, after=snapshot(request))
    return request


def set_policy(
    actor: audit.Actor, link: ClusterLink, approvals_required: int, admin_may_override: bool
) -> ClusterLink:
    """Change a link's approval policy (admins only)."""
    target = f"link {link.name}"
    with audit.refusals(actor, "link.approval_policy", target):
        if not policy.can(actor.user, "approval_policy.manage"):
            raise ReplicationError("Only an admin may change a link's approval policy.", 403)
        if not isinstance(approvals_required, int) or not 0 <= approvals_required <= 3:
            raise ReplicationError("Approvals required must be a whole number from 0 to 3.")
        before = {
            "approvals_required": link.approvals_required,
            "admin_may_override": link.admin_may_override,
        }
        link.approvals_required = approvals_required
        link.admin_may_override = bool(admin_may_override)
        link.save(update_fields=["approvals_required", "admin_may_override"])
    audit.record(
        actor,
        "link.approval_policy",
        target,
        before=before,
        after={"approvals_required": approvals_required, "admin_may_override": admin_may_override},
    )
    return link
