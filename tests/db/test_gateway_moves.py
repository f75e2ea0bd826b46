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
def proxy(monkeypatch) -> list[tuple[str, ...]]:
    """What is asked of the gateway's proxy, in order: ("pause" | "resume", who, gateway) and
    ("switch", who, gateway, cluster), the route then changed."""
    asked: list[tuple[str, ...]] = []

    def switch(actor: audit.Actor, gateway: Gateway, cluster) -> Gateway:
        asked.append(("switch", actor.name, gateway.name, cluster.name))
        gateway.route = cluster
        gateway.save(update_fields=["route"])
        return gateway

    def pause_or_resume(verb: str):
        return lambda actor, gateway, why: asked.append((verb, actor.name, gateway.name))

    monkeypatch.setattr(gateway_moves.gateways, "switch", switch)
    monkeypatch.setattr(gateway_moves.gateways, "pause", pause_or_resume("pause"))
    monkeypatch.setattr(gateway_moves.gateways, "resume", pause_or_resume("resume"))
    return asked


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


def test_an_approved_promote_pauses_the_gateway_and_moves_it_once_its_mirror_is_writable(
    users, mirror, gateway, proxy
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
    # Paused before the promote ran, as the requester (naming the approvers) ...
    asker = "admin (approved by approver)"
    assert proxy[0] == ("pause", asker, "orders")
    mirror.refresh_from_db()
    if mirror.state == MirrorTopic.State.PENDING_STOPPED:  # the stop's own task: run here
        assert move.state == MState.WAITING and len(proxy) == 1
        request_runs.finish_stops(link)
    move.refresh_from_db()
    request.refresh_from_db()
    # ... and switched once the mirror was writable.
    assert MirrorTopic.objects.get(pk=mirror.pk).state == MirrorTopic.State.STOPPED
    assert move.state == MState.SWITCHED
    switched_as = f"{asker} ({Action.PROMOTE} of {link.name})"
    assert proxy[1:] == [("switch", switched_as, "orders", "destination")]
    assert request.state == ApprovalRequest.State.EXECUTED
    assert "Gateway orders switched its clients to destination (" in request.progress


def test_a_gateway_resumes_where_it_was_when_its_mirror_did_not_become_writable(
    users, mirror, gateway, proxy
):
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
    assert move.state == MState.FAILED
    assert proxy == [("resume", f"admin (failover of {mirror.link.name})", "orders")]
    assert move.message == (
        f"Gateway orders was not switched: {mirror.mirror_topic} did not become writable on "
        "destination; switch it on its page once they are; its clients are back on source."
    )


def test_a_move_runs_only_with_the_live_authority_of_whoever_asked(users, mirror, gateway, proxy):
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
        state=MState.SWITCHING,
    )
    gateway_moves._switch(move)
    move.refresh_from_db()
    assert move.state == MState.FAILED and [verb for verb, *_ in proxy] == ["resume"]
    assert "admin, who asked, may no longer manage gateways" in move.message


def test_a_cutover_that_does_not_start_resumes_the_gateway_where_it_was(
    users, mirror, gateway, proxy, memory_clusters
):
    memory_clusters["source"].produce(mirror.mirror_topic, 0, 3)  # the mirror lags: refused

    [refused] = _ask(users, "admin", mirror, "orders").outcomes

    assert "partition 0 lags 3 records" in refused.error
    move = GatewayMove.objects.get()
    assert [verb for verb, *_ in proxy] == ["pause", "resume"]
    assert move.state == MState.FAILED and move.message == (
        f"Gateway orders was not switched: the promote of {mirror.mirror_topic} did not start; "
        "its clients are back on source."
    )
    assert list(AuditEvent.objects.filter(action="gateway.switch")) == []
