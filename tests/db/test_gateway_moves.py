"""A cutover that names a gateway (replication/actions/gateway_moves.py), on in-memory clusters:
who may name one and which, refused in words before anything changes; the approvers' plan
saying that every client of the gateway moves; the move made once the mirror is writable, with
the live authority of whoever asked, and not made (in words) when the mirror did not become
writable or the asker lost the right. The proxy's restart is replaced here by a record of the
switch asked for; a real Kroxylicious switched by a failover under running clients is
tests/integration/test_gateways.py."""

from __future__ import annotations

import pytest

from devstack import kafka
from replication.actions import approvals, gateway_moves, request_runs
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ApprovalRequest, AuditEvent, Gateway, GatewayMove, MirrorTopic
from replication.topics.mirrors import create_mirror

Action = ApprovalRequest.Action
MState = GatewayMove.State


@pytest.fixture
def mirror(make_link, make_topic, topic_name, memory_clusters, users) -> MirrorTopic:
    make_topic(kafka.SOURCE, topic_name)
    link = make_link()
    made = create_mirror(_as(users, "admin"), link, topic_name)
    memory_clusters["source"].produce(topic_name, 0, 5)
    memory_clusters["destination"].produce(topic_name, 0, 5)  # copied: no lag
    return made


@pytest.fixture
def switches(monkeypatch) -> list[tuple[str, str, str]]:
    """Each switch asked of the proxy: (who, gateway, cluster), the route then changed."""
    made: list[tuple[str, str, str]] = []

    def switch(actor: audit.Actor, gateway: Gateway, cluster) -> Gateway:
        made.append((actor.name, gateway.name, cluster.name))
        gateway.route = cluster
        gateway.save(update_fields=["route"])
        return gateway

    monkeypatch.setattr(gateway_moves.gateways, "switch", switch)
    return made


def _as(users, role: str) -> audit.Actor:
    return audit.Actor(user=users[role], name=role)


def _ask(users, role: str, mirror: MirrorTopic, gateway: str, action: str = Action.PROMOTE):
    return approvals.submit(
        _as(users, role),
        mirror.link,
        action,
        [mirror.mirror_topic],
        "moving the shop",
        params={"gateway": gateway},
    )


def test_only_an_admin_may_name_a_gateway_and_only_one_that_may_route_there(
    users, mirror, gateway, registered_clusters
):
    with pytest.raises(ReplicationError, match="Only an admin may move a gateway's clients") as no:
        _ask(users, "operator", mirror, "orders")
    assert no.value.status == 403
    with pytest.raises(ReplicationError, match="No gateway named 'elsewhere'") as missing:
        _ask(users, "admin", mirror, "elsewhere")
    assert missing.value.status == 404
    gateway.clusters.set([registered_clusters["source"]])
    with pytest.raises(ReplicationError, match="may not route to destination, where the topics"):
        _ask(users, "admin", mirror, "orders")

    mirror.refresh_from_db()
    assert mirror.state == MirrorTopic.State.ACTIVE
    assert not ApprovalRequest.objects.exists() and not GatewayMove.objects.exists()
    refused = AuditEvent.objects.filter(action="request.promote", result="refused")
    assert refused.count() == 3


def test_the_approvers_plan_says_every_client_of_the_gateway_moves(users, mirror, gateway):
    link = mirror.link
    link.approvals_required, link.admin_may_override = 1, False
    link.save(update_fields=["approvals_required", "admin_may_override"])

    request = _ask(users, "admin", mirror, "orders").request

    assert request is not None and request.params == {"gateway": "orders"}
    said = (
        "Gateway orders (127.0.0.1:29400) routes its clients from source to destination once "
        "every topic named is writable there: all of them, whatever topics they use"
    )
    assert any(e.startswith(said) for e in request.plan_at_request["effects"])
    assert any(e.startswith(said) for e in approvals.plan_now(request)["effects"])
    assert not GatewayMove.objects.exists()  # nothing moves before the approval


def test_an_approved_promote_moves_the_gateway_once_its_mirror_is_writable(
    users, mirror, gateway, switches
):
    link = mirror.link
    link.approvals_required, link.admin_may_override = 1, False
    link.save(update_fields=["approvals_required", "admin_may_override"])
    request = _ask(users, "admin", mirror, "orders").request
    approvals.approve(_as(users, "approver"), request)
    request.refresh_from_db()

    request_runs.execute(request)

    move = GatewayMove.objects.get()
    assert (move.request, move.requester, move.to.name) == (request, users["admin"], "destination")
    mirror.refresh_from_db()
    if mirror.state == MirrorTopic.State.PENDING_STOPPED:  # the stop's own task: run here
        assert move.state == MState.WAITING and switches == []
        request_runs.finish_stops(link)
    move.refresh_from_db()
    request.refresh_from_db()
    assert MirrorTopic.objects.get(pk=mirror.pk).state == MirrorTopic.State.STOPPED
    assert move.state == MState.SWITCHED
    # Audited as the requester's, naming the approvers, as the cutover itself is.
    asker = f"admin (approved by approver) ({Action.PROMOTE} of {link.name})"
    assert switches == [(asker, "orders", "destination")]
    assert request.state == ApprovalRequest.State.EXECUTED
    assert request.progress.endswith("Gateway orders switched its clients to destination.")


def test_a_gateway_stays_when_its_mirror_did_not_become_writable(users, mirror, gateway, switches):
    move = GatewayMove.objects.create(
        gateway=gateway,
        link=mirror.link,
        action=Action.FAILOVER,
        topics=[mirror.mirror_topic],
        to=mirror.link.destination,
        requester=users["admin"],
        requester_name="admin",
    )
    gateway_moves.finish(mirror.link)  # the mirror is still ACTIVE: its stop failed

    move.refresh_from_db()
    assert move.state == MState.FAILED and switches == []
    assert move.message == (
        f"Gateway orders was not switched: {mirror.mirror_topic} did not become writable on "
        "destination. Its clients stay on source; switch it on its page once they are."
    )


def test_a_move_runs_only_with_the_live_authority_of_whoever_asked(
    users, mirror, gateway, switches
):
    admin = users["admin"]
    link = mirror.link
    link.approvals_required, link.admin_may_override = 1, False
    link.save(update_fields=["approvals_required", "admin_may_override"])
    asked = _ask(users, "admin", mirror, "orders").request
    # Made an operator: it may still ask for a promote, not move a gateway's clients.
    admin.groups.set([users["operator"].groups.get()])
    with pytest.raises(ReplicationError, match="may no longer move a gateway's clients"):
        approvals.approve(_as(users, "approver"), asked)
    asked.refresh_from_db()
    assert asked.state == ApprovalRequest.State.SUPERSEDED
    assert MirrorTopic.objects.get(pk=mirror.pk).state == MirrorTopic.State.ACTIVE

    # A move whose asker lost the right after the cutover ran is not made either.
    move = GatewayMove.objects.create(
        gateway=gateway,
        link=link,
        action=Action.TRUNCATE_AND_RESTORE,
        topics=[mirror.mirror_topic],
        to=link.destination,
        requester=admin,
        requester_name="admin",
    )
    gateway_moves._switch(move)
    move.refresh_from_db()
    assert move.state == MState.FAILED and switches == []
    assert "admin, who asked, may no longer manage gateways" in move.message
