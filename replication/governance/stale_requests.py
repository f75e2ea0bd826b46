"""Requests overtaken by events: a pending promote, failover or link deletion whose target
changed meanwhile (broken glass, another request run, the mirror or link deleted, paused,
failed) ends at once as SUPERSEDED, saying by what, so no approver approves what no longer
holds. The approvals module refuses to approve it later."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.utils import timezone

from replication.governance import audit, notifications
from replication.models import ApprovalRequest, ClusterLink

log = logging.getLogger(__name__)

RState = ApprovalRequest.State
Action = ApprovalRequest.Action


def supersede(link: ClusterLink, topics: Iterable[str] | None, why: str) -> int:
    """End the PENDING requests of `link` that `why` overtook: those that promote or fail
    over one of `topics`, or every one (a deletion of the link too) when `topics` is None.
    Returns how many ended; each is audited."""
    pending = ApprovalRequest.objects.filter(link=link, state=RState.PENDING)
    if topics is not None:
        names = set(topics)
        pending = pending.exclude(action=Action.DELETE_LINK)
        ending = [r for r in pending if names & set(r.topics)]
    else:
        ending = list(pending)
    return sum(end(request, why, [RState.PENDING]) for request in ending)


def end(request: ApprovalRequest, why: str, sources: list[str]) -> bool:
    """End one request as SUPERSEDED (from one of `sources`), audited; False if it had left
    those states already."""
    now = timezone.now()
    changed = ApprovalRequest.objects.filter(pk=request.pk, state__in=sources).update(
        state=RState.SUPERSEDED, state_time=now, decided_by="(superseded)", decision_reason=why
    )
    if not changed:
        return False
    request.state, request.state_time = RState.SUPERSEDED, now
    request.decided_by, request.decision_reason = "(superseded)", why
    notifications.tell_requester(request)
    audit.record(
        audit.Actor.system("approvals"),
        "request.supersede",
        f"request {request.pk}",
        after={
            "id": request.pk,
            "action": request.action,
            "state": request.state,
            "topics": request.topics,
        },
        message=why,
    )
    log.info("Request %d superseded: %s", request.pk, why)
    return True
