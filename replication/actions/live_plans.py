"""A pending request's plan as things stand now (`approvals.plan_now`), made once for everyone
who looks within FRESH_S: the request page refreshes it every 15 s for each viewer, the API's
GET and the command-line tools read it too, and each one made reads both clusters (up to 500
consumer groups' offsets on each, descriptions, end offsets). So the clusters answer one
reading per request every FRESH_S, however many approvers watch it.

Kept in Redis, shared by every console process; while one process makes it, the others wait
for it rather than read the clusters too. Without Redis, each look makes its own. A change of
the link's mirrors (one made, deleted or moved to another state) is seen at the next look: the
key holds their fingerprint, so only what the clusters answer is up to FRESH_S old."""

from __future__ import annotations

import hashlib
import json
import logging

import redis

from replication.actions import approvals, plans
from replication.core import redis_channel
from replication.models import ApprovalRequest, MirrorTopic

log = logging.getLogger(__name__)

FRESH_S = 15  # the request page's refresh: each viewer's next look finds a new one
MAKING_S = 60  # the longest one waits for another process to make it, then makes its own


def plan_now(request: ApprovalRequest) -> plans.Plan:
    """The request's plan now, as made at most FRESH_S ago (its `read_at` says when); a
    refusal of the whole is raised, as `approvals.plan_now` raises it, and is not kept."""
    # The time it was asked as well as its id: a database that hands an id out again (a test
    # database rolled back) never finds another request's plan.
    key = (
        f"isthmus:plan-now:{request.pk}:{request.created_at.timestamp():.6f}:"
        f"{_mirrors_fingerprint(request)}"
    )
    kept = _kept(key)
    if kept is not None:
        return kept
    try:
        with redis_channel.held(f"plan-now:{request.pk}", MAKING_S, wait=MAKING_S):
            return _kept(key) or _made(request, key)  # another may have made it meanwhile
    except redis.RedisError:
        return approvals.plan_now(request)


def _mirrors_fingerprint(request: ApprovalRequest) -> str:
    """What the plan reads of the database that may change while the request waits: the
    mirrors of its link (both halves: they share the name) and their states."""
    rows = MirrorTopic.objects.filter(link__name=request.link_name).order_by("pk")
    seen = repr(list(rows.values_list("pk", "state", "state_time")))
    return hashlib.sha256(seen.encode()).hexdigest()[:16]


def _kept(key: str) -> plans.Plan | None:
    try:
        found = redis_channel.client().get(key)
    except redis.RedisError:
        return None
    return json.loads(found) if found is not None else None


def _made(request: ApprovalRequest, key: str) -> plans.Plan:
    plan = approvals.plan_now(request)
    try:
        redis_channel.client().set(key, json.dumps(plan), ex=FRESH_S)
    except redis.RedisError as exc:  # the next look makes its own
        log.warning("Could not keep request %s's plan for other viewers: %s", request.pk, exc)
    return plan
