"""Gateways refused in words, each refusal audited, nothing changed: what no proxy is started
for (a bad address, a cluster the gateway may not route to, a switch to where it routes now);
and their pages: what each role sees, a change of clusters, a switch's confirmation and a
deletion. Starting and switching a real proxy, on the pages too:
tests/integration/test_gateways.py."""

from __future__ import annotations

import html
import socket

import pytest
from django.contrib.messages import get_messages
from django.test import override_settings
from django.urls import reverse

from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.kafka import gateways
from replication.models import AuditEvent, Gateway, KafkaCluster

pytestmark = pytest.mark.usefixtures("gateway_files")

ACTOR = audit.Actor.system("tests")


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


# The pages. ---------------------------------------------------------------------------------


def text(response) -> str:
    return html.unescape(response.content.decode())


def flashed(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_everyone_sees_the_gateways_and_only_an_admin_what_changes_them(gateway, client_as):
    for role in ("viewer", "operator", "approver", "admin"):
        client = client_as(role)
        listed = text(client.get(reverse("gateways")))
        assert 'data-gateway="orders"' in listed and "127.0.0.1:29400" in listed
        assert "stopped" in listed
        page = text(client.get(reverse("gateway-detail", args=["orders"])))
        assert "Routes to" in page and "source" in page
        admin = role == "admin"
        assert ("Define gateway" in listed) == admin
        assert ("Switch to destination" in page) == admin
        assert ('id="gateway-log"' in page) == admin  # the stopped proxy's log says why
    assert "Gateways" in text(client_as("viewer").get(reverse("clusters")))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"address": "10.1.2.3:9400"}, "is not on loopback"),
        ({"address": "127.0.0.1"}, "is not HOST:PORT"),
        ({"route": "destination", "clusters": ["source"]}, "may route to"),
        ({"route": "nowhere"}, "Select a valid choice"),
        ({"name": "a b"}, "Gateway name 'a b'"),
        ({"clusters": []}, "This field is required"),
    ],
)
def test_a_gateway_defined_wrong_is_refused_in_words_and_nothing_is_saved(
    registered_clusters, client_as, change, words
):
    form = {
        "name": "payments",
        "address": "127.0.0.1:29610",
        "clusters": ["source", "destination"],
        "route": "source",
        **change,
    }
    response = client_as("admin").post(reverse("gateway-create"), form)
    assert response.status_code == 200 and words in text(response), text(response)[-2000:]
    assert not Gateway.objects.exists()


def test_a_change_of_clusters_is_saved_and_audited_and_the_route_must_stay_among_them(
    gateway, client_as
):
    admin = client_as("admin")
    url = reverse("gateway-change", args=["orders"])
    kept = admin.post(url, {"address": gateway.address, "clusters": ["destination"]})
    assert kept.status_code == 200 and "may route to" in text(kept)
    assert set(gateway.clusters.values_list("name", flat=True)) == {"source", "destination"}

    changed = admin.post(url, {"address": gateway.address, "clusters": ["source"]})
    assert changed.status_code == 302 and flashed(changed) == ["Changed gateway orders."]
    assert list(gateway.clusters.values_list("name", flat=True)) == ["source"]
    event = AuditEvent.objects.filter(action="gateway.change").latest("pk")
    assert (event.before["clusters"], event.after["clusters"]) == (
        ["destination", "source"],
        ["source"],
    )


def test_a_switch_asks_for_the_gateways_name_and_changes_nothing_without_it(gateway, client_as):
    admin = client_as("admin")
    url = reverse("gateway-switch", args=["orders", "destination"])
    asked = text(admin.get(url))
    assert "Switch gateway orders to destination?" in asked
    assert "Every client of 127.0.0.1:29400 is moved from source to destination" in asked
    refused = admin.post(url, {"confirm_name": "order"})
    assert flashed(refused) == ["Type orders to confirm; nothing was changed."]
    gateway.refresh_from_db()
    assert (gateway.route.name, gateway.switches) == ("source", 0)
    missing = admin.get(reverse("gateway-switch", args=["orders", "nowhere"]))
    assert missing.status_code == 404 and "No cluster named 'nowhere'" in text(missing)


def test_a_deleted_gateway_is_gone_audited_and_its_page_says_so(gateway, client_as):
    admin = client_as("admin")
    deleted = admin.post(reverse("gateway-delete", args=["orders"]), {"confirm_name": "orders"})
    assert deleted.status_code == 302 and deleted["Location"] == reverse("gateways")
    assert not Gateway.objects.exists()
    assert AuditEvent.objects.filter(action="gateway.delete", result="ok").count() == 1
    gone = admin.get(reverse("gateway-detail", args=["orders"]))
    assert gone.status_code == 404 and "No gateway named 'orders'" in text(gone)


# The API and the tool. -----------------------------------------------------------------------


def test_the_api_lists_describes_changes_and_deletes_a_gateway_and_refuses_in_words(gateway, api):
    admin = api("admin")
    listed = admin.get("/kafka/v3/gateways").json()
    assert listed["kind"] == "GatewayDataList"
    [found] = listed["data"]
    assert (found["gateway_name"], found["address"], found["route_cluster_name"]) == (
        "orders",
        "127.0.0.1:29400",
        "source",
    )
    assert (found["running"], found["connections_total"], found["switches"]) == (False, None, 0)
    assert found["cluster_names"] == ["destination", "source"]

    url = "/kafka/v3/gateways/orders"
    refusals = [
        ({"cluster_names": ["nowhere"]}, 400, "No cluster named 'nowhere' is registered"),
        ({"cluster_names": ["destination"]}, 400, "may route to"),
        ({"route_cluster_name": "destination"}, 400, "Unknown field(s) route_cluster_name"),
        ({}, 400, "Give 'address', 'cluster_names' or both"),
        ({"address": "10.1.2.3:9400"}, 400, "is not on loopback"),
    ]
    for body, status, words in refusals:
        answer = admin.patch(url, body, content_type="application/json")
        assert answer.status_code == status and words in answer.json()["message"], answer.json()
    assert admin.get(url).json()["cluster_names"] == ["destination", "source"]

    changed = admin.patch(url, {"cluster_names": ["source"]}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["cluster_names"] == ["source"]
    switch = admin.post(
        f"{url}:switch", {"cluster_name": "source"}, content_type="application/json"
    )
    assert switch.status_code == 409 and "already routes to source" in switch.json()["message"]
    assert admin.delete(url).status_code == 204
    gone = admin.get(url)
    assert gone.status_code == 404 and "No gateway named 'orders'" in gone.json()["message"]
    viewer = api("viewer").delete(url)
    assert viewer.status_code == 403 and "does not allow gateway.manage" in viewer.json()["message"]


def test_the_tool_lists_and_describes_gateways_through_the_console(
    gateway, tokens, live_server, monkeypatch, capsys
):
    from isthmus_cli import gateways as tool

    monkeypatch.setenv("ISTHMUS_URL", live_server.url)
    monkeypatch.setenv("ISTHMUS_TOKEN", tokens["viewer"])
    monkeypatch.setenv("ISTHMUS_CONFIG", "/nonexistent")
    assert tool.main(["--list"]) == 0
    assert capsys.readouterr().out == (
        "Gateway: orders\tAddress: 127.0.0.1:29400\tRoute: source\t"
        "Clusters: destination,source\tProxy: stopped\tSwitches: 0\n"
    )
    assert tool.main(["--describe", "--gateway", "orders"]) == 0
    assert "\tConnectionsAccepted: -\n\tLastSwitch: -\n" in capsys.readouterr().out
    assert tool.main(["--switch", "--gateway", "orders", "--cluster", "destination"]) == 1
    assert "does not allow gateway.manage" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tool.main(["--create", "--gateway", "x"])
    assert "--create needs --address and --clusters and --route" in capsys.readouterr().err


def test_a_gateways_host_that_does_not_answer_is_said_and_nothing_is_left(
    registered_clusters, monkeypatch, settings
):
    """With ISTHMUS_GATEWAY_QUEUE naming a queue no worker takes, a define is refused in words
    that say which host to start, no gateway is left, and a page's "does it run" is no."""
    settings.GATEWAY_QUEUE = "gateways-nobody-takes"
    monkeypatch.setattr(gateways, "RUNNING_ASKED_S", 0.5)
    source = registered_clusters["source"]
    with pytest.raises(ReplicationError) as refused:
        gateways.define(ACTOR, "orders", "127.0.0.1:29400", [source], source)
    assert refused.value.status == 503
    assert str(refused.value) == (
        "The gateways' host (the worker taking queue gateways-nobody-takes) did not answer "
        "within 0.5 s: start it (the compose file's gateway service), then try again."
    )
    assert not Gateway.objects.exists()
    assert AuditEvent.objects.get(action="gateway.define").result == AuditEvent.Result.FAILED
    gone = Gateway(name="orders", host="127.0.0.1", port=29400, route=source)
    assert gateways.running(gone) is False


def test_the_gateways_host_answers_what_holds_a_gateways_ports(registered_clusters):
    """What the gateways' host's task returns: values it can send back (a port's holder)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        spec = {"name": "orders", "host": "127.0.0.1", "port": port}
        answer = gateways.on_this_host("ports_held", spec, registered_clusters["source"].pk)
        assert port in [p for p, _ in answer["value"]]  # (others may hold ports after it)
        assert gateways.on_this_host("running", spec, None) == {"value": False}
