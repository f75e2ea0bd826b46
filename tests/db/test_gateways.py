"""Gateways refused in words, each refusal audited, nothing changed: what no proxy is started
for (a bad address, a cluster the gateway may not route to, a switch to where it routes now).
Starting and switching a real proxy: tests/integration/test_gateways.py."""

from __future__ import annotations

import pytest
from django.test import override_settings

from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka import gateways
from replication.models import AuditEvent, Gateway, KafkaCluster

ACTOR = audit.Actor.system("tests")


@pytest.fixture(autouse=True)
def _own_var_dir(tmp_path):
    """A gateway's lock, config, pid and log files in the test's folder, not var/."""
    with override_settings(VAR_DIR=tmp_path):
        yield


@pytest.fixture
def gateway(registered_clusters) -> Gateway:
    made = Gateway.objects.create(
        name="orders", host="127.0.0.1", port=29400, route=registered_clusters["source"]
    )
    made.clusters.set([registered_clusters["source"], registered_clusters["destination"]])
    return made


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("127.0.0.1", "is not HOST:PORT"),
        ("127.0.0.1:80", "a port from 1024"),
        ("127.0.0.1:65530", "a port from 1024 to 65524"),
        ("10.1.2.3:9400", "is not on loopback"),
        ("kafka.example.com:9400", "is not on loopback"),
    ],
)
def test_an_address_off_loopback_or_without_a_usable_port_is_refused(db, address, words):
    with pytest.raises(ReplicationError, match=words):
        gateways.parse_address(address)


def test_loopback_in_any_spelling_is_taken_and_any_address_when_allowed(db):
    assert gateways.parse_address("localhost:9400") == ("localhost", 9400)
    assert gateways.parse_address("[::1]:9400") == ("::1", 9400)
    with override_settings(GATEWAY_ANY_ADDRESS=True):
        assert gateways.parse_address("10.1.2.3:9400") == ("10.1.2.3", 9400)


def test_an_address_among_another_gateways_ports_is_refused(gateway):
    with pytest.raises(ReplicationError, match="overlaps the ports of gateway orders") as refused:
        gateways.parse_address("127.0.0.1:29405")
    assert refused.value.status == 409
    # Its own ports are no obstacle to a gateway that moves.
    assert gateways.parse_address("127.0.0.1:29405", gateway) == ("127.0.0.1", 29405)


def test_a_gateway_must_route_to_one_of_its_clusters(registered_clusters):
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    with pytest.raises(ReplicationError, match="not among the clusters it may route to"):
        gateways.define(ACTOR, "orders", "127.0.0.1:29400", [destination], source)
    with pytest.raises(ReplicationError, match="at least one cluster"):
        gateways.define(ACTOR, "orders", "127.0.0.1:29400", [], source)
    with pytest.raises(ReplicationError, match="Gateway name"):
        gateways.define(ACTOR, "no/slash", "127.0.0.1:29400", [source], source)
    assert not Gateway.objects.exists()
    refusals = AuditEvent.objects.filter(action="gateway.define", result="refused")
    assert refusals.count() == 3


def test_a_switch_to_a_cluster_it_may_not_route_to_is_refused_and_changes_nothing(
    gateway, registered_clusters
):
    other = KafkaCluster.objects.create(name="third", bootstrap_servers="127.0.0.1:1")
    with pytest.raises(ReplicationError, match="may not route to third: it may route to"):
        gateways.switch(ACTOR, gateway, other)
    with pytest.raises(ReplicationError, match="already routes to source") as refused:
        gateways.switch(ACTOR, gateway, registered_clusters["source"])
    assert refused.value.status == 409
    gateway.refresh_from_db()
    assert (gateway.route.name, gateway.switches) == ("source", 0)
    events = AuditEvent.objects.filter(action="gateway.switch", target="gateway orders")
    assert [e.result for e in events] == ["refused", "refused"]


def test_a_cluster_reached_over_tls_without_a_plain_listener_is_refused(registered_clusters):
    tls = KafkaCluster.objects.create(
        name="tls", bootstrap_servers="127.0.0.1:1", client_config={"security.protocol": "SSL"}
    )
    with pytest.raises(ReplicationError, match="reached over TLS"):
        gateways.define(ACTOR, "secure", "127.0.0.1:29400", [tls], tls)


def test_metrics_give_each_gateways_route_and_switches_and_no_connections_while_it_is_down(
    gateway,
):
    from replication.overview import metrics

    text = metrics.prometheus_text()
    assert 'isthmus_gateway_route{gateway="orders",cluster="source"} 1' in text
    assert 'isthmus_gateway_switches_total{gateway="orders"} 0' in text
    assert 'isthmus_gateway_connections_total{gateway="orders"}' not in text


def test_each_defined_gateway_is_a_devstack_part_that_the_name_gateway_stands_for(gateway):
    from django.conf import settings

    from devstack.stack import Stack

    stack = Stack(settings.VAR_DIR)  # the test's own folder
    (part,) = stack.select(["gateway"])
    assert part.name == "gateway-orders"
    assert part.address == "127.0.0.1:29400 (routes to source)"
    assert part.ports == tuple(range(29400, 29412))
    assert stack.pidfile(part.name) == gateways.pidfile(gateway)


def test_a_change_keeps_the_route_among_its_clusters_and_a_deletion_is_audited(
    gateway, registered_clusters
):
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    with pytest.raises(ReplicationError, match="routes to source, which is not among"):
        gateways.change(ACTOR, gateway, clusters=[destination])
    gateways.change(ACTOR, gateway, clusters=[source])
    assert list(gateway.clusters.all()) == [source]
    gateways.delete(ACTOR, gateway)
    assert not Gateway.objects.exists()
    events = AuditEvent.objects.filter(target="gateway orders").order_by("pk")
    assert [(e.action, e.result) for e in events] == [
        ("gateway.change", "refused"),
        ("gateway.change", "ok"),
        ("gateway.delete", "ok"),
    ]
    assert events[1].before["clusters"] == ["destination", "source"]
    assert events[1].after["clusters"] == ["source"]
