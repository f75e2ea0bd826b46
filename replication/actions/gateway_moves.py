"""A gateway's switch as part of a cutover (docs/gateways.md): a promote, failover, reverse or
truncate-and-restore may name a gateway (`params["gateway"]`), and once every mirror topic it
names is writable on its new cluster (the moment the cutover is done: its mirrors stopped), the
gateway routes its clients there, in the same approved request. A restore moves them at its
start: its topics stay writable where they were promoted, and the old primary is being
truncated.

Kroxylicious routes a whole virtual cluster to one cluster, so the switch moves every client of
the gateway, whatever topics it uses: the dry run says so. Whoever asks must be allowed to
manage gateways, when asking, when an approved request runs, and when the switch is made; the
switch is audited as theirs.

The move is stored (`GatewayMove`), so that the at-once path and an approved request share it,
and it is made by whichever worker finishes the cutover (`request_runs.finish_stops`).
"""

from __future__ import annotations

import logging

from django.utils import timezone

from replication.actions.asked import Asked
from replication.actions.operations import OPERATIONS
from replication.core.errors import ReplicationError
from replication.cutover.promote import UNDER_WAY, TopicOutcome
from replication.governance import audit, policy
from replication.kafka import gateways
from replication.models import ApprovalRequest, ClusterLink, Gateway, GatewayMove, KafkaCluster

log = logging.getLogger(__name__)

Action = ApprovalRequest.Action
MState = GatewayMove.State
CUTOVERS = frozenset(
    {
        Action.PROMOTE,
        Action.FAILOVER,
        Action.REVERSE_AND_START,
        Action.REVERSE_AND_PAUSE,
        Action.TRUNCATE_AND_RESTORE,
    }
)
AT_START = frozenset({Action.TRUNCATE_AND_RESTORE})
MANAGE = "gateway.manage"


def named(asked: Asked) -> str:
    """The gateway the cutover names ("" for none)."""
    return str(asked.params.get("gateway") or "")


def target(asked: Asked) -> KafkaCluster:
    """The cluster where the named topics are writable once the cutover is done: the link's
    destination; a restore's link is the half into the old primary, so its source."""
    if asked.action not in AT_START:
        return asked.link.destination
    found = KafkaCluster.objects.filter(cluster_id=asked.link.source_cluster_id).first()
    if found is None:
        raise ReplicationError(
            f"Link {asked.link.name}'s source cluster is not registered, so no gateway can "
            "route to it: register it on the Clusters page, or ask without a gateway."
        )
    return found


def check(user, asked: Asked) -> Gateway | None:
    """The gateway the cutover names, once it is known that `user` may switch it and it may
    route to where the topics will be writable; refused in words otherwise."""
    name = named(asked)
    if not name:
        return None
    if asked.action not in CUTOVERS:
        raise ReplicationError("Only a promote, failover, reverse or restore moves a gateway.")
    if not policy.can(user, MANAGE):
        raise ReplicationError(
            "Only an admin may move a gateway's clients: ask without a gateway, or ask an admin.",
            403,
        )
    gateway = gateways.get_gateway(name)
    to = target(asked)
    if not gateway.clusters.filter(pk=to.pk).exists():
        raise ReplicationError(
            f"Gateway {gateway.name} may not route to {to.name}, where the topics will be "
            "writable: an admin adds the cluster to it first (a change on its page)."
        )
    return gateway


def effect(asked: Asked) -> str:
    """What the cutover does to the gateway it names, for its dry run ("" for none)."""
    name = named(asked)
    gateway = Gateway.objects.select_related("route").filter(name=name).first()
    if gateway is None:
        return ""
    to = target(asked)
    if gateway.route_id == to.pk:
        return f"Gateway {gateway.name} already routes to {to.name}: its clients stay."
    when = (
        "as the restore starts"
        if asked.action in AT_START
        else "once every topic named is writable there"
    )
    return (
        f"Gateway {gateway.name} ({gateway.address}) routes its clients from {gateway.route.name} "
        f"to {to.name} {when}: all of them, whatever topics they use (a gateway routes its whole "
        "virtual cluster to one cluster, not topic by topic). They reconnect by themselves; "
        "producers pause for the proxy's restart, a few seconds."
    )


def store(
    actor: audit.Actor,
    asked: Asked,
    outcomes: list[TopicOutcome],
    request: ApprovalRequest | None = None,
) -> GatewayMove | None:
    """Keep the move the cutover that just started names (its topics those that started), or
    make it at once for a restore; None when it names no gateway or no topic started."""
    name = named(asked)
    started = [o.mirror_topic for o in outcomes if not o.error]
    if not name or not started:
        return None
    gateway = Gateway.objects.filter(name=name).first()
    if gateway is None:  # deleted since it was checked: nothing to move
        return None
    move = GatewayMove.objects.create(
        gateway=gateway,
        link=asked.link,
        action=asked.action,
        topics=started,
        to=target(asked),
        request=request,
        requester=actor.user,
        requester_name=actor.name,
    )
    if asked.action in AT_START:
        _switch(move)
    return move


def finish(link: ClusterLink) -> None:
    """Make each move of `link` whose cutover is done: switched once all its topics are
    writable, failed (in words) if one is not."""
    waiting = GatewayMove.objects.filter(link=link, state=MState.WAITING)
    for move in waiting.select_related("gateway", "to"):
        found = link.mirrors.filter(mirror_topic__in=move.topics)
        states = dict(found.values_list("mirror_topic", "state"))
        if any(state in UNDER_WAY for state in states.values()):
            continue
        wanted = OPERATIONS[move.action].done_states
        missed = [t for t in move.topics if states.get(t) not in wanted]
        if missed:
            _end(
                move,
                MState.FAILED,
                f"Gateway {move.gateway.name} was not switched: {', '.join(missed)} did not "
                f"become writable on {move.to.name}. Its clients stay on "
                f"{move.gateway.route.name}; switch it on its page once they are.",
            )
        else:
            _switch(move)


def _switch(move: GatewayMove) -> None:
    """Switch the move's gateway with the live authority of whoever asked for the cutover."""
    if not GatewayMove.objects.filter(pk=move.pk, state=MState.WAITING).update(
        state=MState.SWITCHING
    ):
        return  # another worker makes it
    user, gateway = move.requester, move.gateway
    if user is None or not user.is_active or not policy.can(user, MANAGE):
        _end(
            move,
            MState.FAILED,
            f"Gateway {gateway.name} was not switched: {move.requester_name}, who asked, may no "
            f"longer manage gateways. Its clients stay on {gateway.route.name}; an admin "
            "switches it on its page.",
        )
        return
    gateway.refresh_from_db()
    if gateway.route_id == move.to_id:
        _end(move, MState.SWITCHED, f"Gateway {gateway.name} already routed to {move.to.name}.")
        return
    actor = audit.Actor(
        user=user, name=f"{move.requester_name} ({move.action} of {move.link.name})"[:150]
    )
    try:
        gateways.switch(actor, gateway, move.to)
    except ReplicationError as exc:
        _end(move, MState.FAILED, f"Gateway {gateway.name} was not switched: {exc}")
        return
    _end(move, MState.SWITCHED, f"Gateway {gateway.name} switched its clients to {move.to.name}.")


def _end(move: GatewayMove, state: str, message: str) -> None:
    move.state, move.message, move.done_at = state, message, timezone.now()
    move.save(update_fields=["state", "message", "done_at"])
    log.info("%s", message)


def outcome(request: ApprovalRequest) -> tuple[bool, str]:
    """(whether the request's gateway move went well or there is none, its words)."""
    move = GatewayMove.objects.filter(request=request).order_by("-created_at").first()
    if move is None or move.state == MState.WAITING:
        return True, ""
    return move.state == MState.SWITCHED, move.message
