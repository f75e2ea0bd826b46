"""A gateway's clients moved with a cutover (docs/gateways.md): a promote, failover, reverse or
truncate-and-restore may name a gateway (`params["gateway"]`). As the cutover starts, the
gateway's clients are paused (its proxy stopped: they retry, holding what they produce), so none
writes the old cluster while the topics change hands and a promote finds its mirrors caught up;
once every mirror topic it names is writable on its new cluster (its mirrors stopped), the
gateway starts again routing them there, in the same approved request. A cutover that does not
get there starts the gateway again where it was. A restore moves them before it starts: its
topics stay writable where they were promoted, and the old primary is about to be truncated.

Kroxylicious routes a whole virtual cluster to one cluster, so every client of the gateway
moves, whatever topics it uses: the dry run says so. Whoever asks must be allowed to manage
gateways, when asking, when an approved request runs, and when the switch is made; the pause
and the switch are audited as theirs.

The move is stored (`GatewayMove`), so that the at-once path and an approved request share it,
and it is made by whichever worker finishes the cutover (`request_runs.finish_stops`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from replication.actions.asked import Asked
from replication.actions.operations import OPERATIONS, Ran
from replication.core.errors import ReplicationError
from replication.cutover.promote import UNDER_WAY
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
# A move whose cutover's start never told which topics it waits for: its worker was lost.
STARTING_LOST = timedelta(minutes=5)


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


def check(actor: audit.Actor, asked: Asked) -> Gateway | None:
    """The gateway the cutover names, once it is known that `actor` may switch it (an admin,
    or Isthmus itself: a command run on its host) and it may route to where the topics will
    be writable; refused in words otherwise."""
    name = named(asked)
    if not name:
        return None
    if asked.action not in CUTOVERS:
        raise ReplicationError("Only a promote, failover, reverse or restore moves a gateway.")
    if actor.user is not None and not policy.can(actor.user, MANAGE):
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
    gateway = Gateway.objects.select_related("route").filter(name=named(asked)).first()
    if gateway is None:
        return ""
    to = target(asked)
    if gateway.route_id == to.pk:
        return f"Gateway {gateway.name} already routes to {to.name}: its clients stay."
    moved = (
        f"Gateway {gateway.name} ({gateway.address}) routes its clients from "
        f"{gateway.route.name} to {to.name}"
    )
    every = (
        ": all of them, whatever topics they use (a gateway routes its whole virtual cluster "
        "to one cluster, not topic by topic). They reconnect by themselves"
    )
    if asked.action in AT_START:
        return f"{moved} before the restore starts{every}, after the proxy's restart."
    return (
        f"{moved} once every topic named is writable there{every}. From the start of the "
        "cutover until then they are paused (the proxy stopped: producers retry, holding "
        "what they send, within their delivery.timeout.ms), so none writes "
        f"{gateway.route.name} meanwhile; should the cutover fail, they resume there."
    )


def cut_over(
    actor: audit.Actor,
    asked: Asked,
    run: Callable[[], Ran],
    request: ApprovalRequest | None = None,
) -> Ran:
    """`run()` the cutover, moving the gateway it names with it: its clients paused first (a
    restore's moved first), the move kept for `finish`, the clients resumed where they were if
    no topic's cutover started."""
    gateway = Gateway.objects.select_related("route").filter(name=named(asked)).first()
    if gateway is None:  # none named (or deleted since it was checked): nothing to move
        return run()
    move = GatewayMove.objects.create(
        gateway=gateway,
        link=asked.link,
        action=asked.action,
        # Those that started, once `run` returns (a restore's, now): none for `finish` to take
        # until then, or it could find them not stopped yet.
        topics=asked.topics if asked.action in AT_START else [],
        to=target(asked),
        request=request,
        requester=actor.user,
        requester_name=actor.name,
        by_system=actor.user is None,
        # A restore's is made now, by this worker: no other may take it for one to finish.
        state=MState.SWITCHING if asked.action in AT_START else MState.WAITING,
    )
    if asked.action in AT_START:
        _switch(move)
        return run()
    what = f"the {asked.action} of {', '.join(asked.topics)}"
    gateways.pause(actor, gateway, f"Its clients wait for {what}.")
    try:
        ran = run()
    except ReplicationError as exc:
        _failed(move, f"{what} did not start ({exc})")
        raise
    except Exception:
        _failed(move, f"{what} did not start (an unexpected error: see the worker's log)")
        raise
    started = [o.mirror_topic for o in ran.outcomes if not o.error]
    if not started:
        _failed(move, f"{what} did not start")
    else:
        move.topics = started
        move.save(update_fields=["topics"])
    return ran


def finish(link: ClusterLink) -> None:
    """Make each move of `link` whose cutover is done: switched once all its topics are
    writable, failed (in words) if one is not."""
    waiting = GatewayMove.objects.filter(link=link, state=MState.WAITING)
    for move in waiting.select_related("gateway", "to"):
        if not move.topics:  # its cutover is starting: which topics it waits for is not known
            if timezone.now() - move.created_at > STARTING_LOST and _claimed(move):
                _failed(move, f"the worker starting the {move.action} was lost")
            continue
        found = link.mirrors.filter(mirror_topic__in=move.topics)
        states = dict(found.values_list("mirror_topic", "state"))
        if any(state in UNDER_WAY for state in states.values()) or not _claimed(move):
            continue
        wanted = OPERATIONS[move.action].done_states
        missed = [t for t in move.topics if states.get(t) not in wanted]
        if missed:
            _failed(
                move,
                f"{', '.join(missed)} did not become writable on {move.to.name}; switch it on "
                "its page once they are",
            )
        else:
            _switch(move)


def _claimed(move: GatewayMove) -> bool:
    """Whether this worker makes the move (another that looked at once does not)."""
    claimed = GatewayMove.objects.filter(pk=move.pk, state=MState.WAITING)
    return bool(claimed.update(state=MState.SWITCHING))


def _switch(move: GatewayMove) -> None:
    """Start the move's gateway on its new route, with the live authority of whoever asked."""
    user, gateway = move.requester, move.gateway
    allowed = move.by_system or (user is not None and user.is_active and policy.can(user, MANAGE))
    if not allowed:
        _failed(move, f"{move.requester_name}, who asked, may no longer manage gateways")
        return
    gateway.refresh_from_db()
    if gateway.route_id == move.to_id:
        gateways.resume(_asker(move), gateway, f"The {move.action} is done.")
        _end(move, MState.SWITCHED, f"Gateway {gateway.name} already routed to {move.to.name}.")
        return
    try:
        gateways.switch(_asker(move), gateway, move.to)
    except ReplicationError as exc:
        _end(move, MState.FAILED, f"Gateway {gateway.name} was not switched: {exc}")
        return
    paused = (timezone.now() - move.created_at).total_seconds()
    _end(
        move,
        MState.SWITCHED,
        f"Gateway {gateway.name} switched its clients to {move.to.name} "
        f"({paused:.1f} s after the {move.action} began).",
    )


def _failed(move: GatewayMove, why: str) -> None:
    """The move not made: its clients resumed on the cluster they were on."""
    gateway = move.gateway
    gateway.refresh_from_db()
    try:
        gateways.resume(_asker(move), gateway, f"Not moved: {why}.")
    except ReplicationError as exc:
        back = f"its proxy did not start again there either: {exc}"
    else:
        back = f"its clients are back on {gateway.route.name}"
    _end(move, MState.FAILED, f"Gateway {gateway.name} was not switched: {why}; {back}.")


def _asker(move: GatewayMove) -> audit.Actor:
    name = f"{move.requester_name} ({move.action} of {move.link.name})"
    return audit.Actor(user=move.requester, name=name[:150])


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
