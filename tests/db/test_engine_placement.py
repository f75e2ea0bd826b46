"""Named engines, one per network zone (issue 47): a link is copied by the engine of the zone of
the cluster that opens its connections, the destination's, or the source's for a
source-initiated link, made as Confluent's tools make it (the destination half with
connection.mode=INBOUND, then the source half, link.mode=SOURCE, on the source); until its
source half is made it is handed to no engine. In-memory clusters, a real Redis; the two
engines copying on real brokers: tests/integration/test_engine_placement.py."""

from __future__ import annotations

import pytest
from django.urls import reverse

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.core.redis_channel import client
from replication.engine import process, supervise
from replication.governance import audit
from replication.kafka.clusters import register_cluster
from replication.models import AuditEvent, ClusterLink, KafkaCluster
from replication.topics.link_creation import create_link
from replication.topics.mirrors import create_mirror
from spark_jobs import control
from tests.schema_checks import conforms

ACTOR = audit.Actor.system("tests")
INBOUND = [{"name": "connection.mode", "value": "INBOUND"}]


@pytest.fixture
def zoned(transactional_db, registered_clusters, zone_keeper):
    """The source in network zone "on-prem" (its engine kept there, and its keeper serving the
    console's calls to it), the destination in the console's: (source, destination)."""
    zone_keeper("on-prem")
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    KafkaCluster.objects.filter(pk=source.pk).update(engine="on-prem")
    source.refresh_from_db()
    return source, destination


@pytest.fixture
def rounds(monkeypatch):
    """The supervisor's rounds, without starting an engine (none runs in these tests)."""
    monkeypatch.setattr(supervise, "supervise_engine", lambda now=None: None)
    return supervise.supervise_all


def _handed_to(link: ClusterLink) -> set[str]:
    """The engines (by name) whose links the link is published in."""
    r = client()
    return {
        name
        for name in ("", "on-prem", "cloud")
        if r.hexists(control.links_key(process.engine_id(name=name)), str(link.link_id))
    }


def _create(api_client, cluster: KafkaCluster, name: str, configs: list[dict], **body):
    return api_client.post(
        f"/kafka/v3/clusters/{cluster.cluster_id}/links?link_name={name}",
        {"configs": configs, **body},
        content_type="application/json",
    )


def _source_half(destination: KafkaCluster) -> list[dict]:
    """The source half's configs, as Confluent's recipe gives them: the destination's address
    (its credentials: none on the devstack's PLAINTEXT listener)."""
    return [
        {"name": "link.mode", "value": "SOURCE"},
        {"name": "bootstrap.servers", "value": destination.bootstrap_servers},
    ]


def test_each_engine_name_is_an_engine_of_its_own_and_the_default_keeps_its_id():
    assert process.engine_id(name="") == process.engine_id()
    assert len({process.engine_id(name=n) for n in ("", "on-prem", "cloud")}) == 3
    assert process.engine_id(owner="other", name="on-prem") != process.engine_id(name="on-prem")


def test_a_link_into_a_zones_cluster_is_copied_by_that_zones_engine(
    transactional_db, registered_clusters, zone_keeper, make_topic, topic_name, rounds
):
    zone_keeper("cloud")
    destination = registered_clusters["destination"]
    KafkaCluster.objects.filter(pk=destination.pk).update(engine="cloud")
    destination.refresh_from_db()
    make_topic(kafka.SOURCE, topic_name)
    link = create_link(
        ACTOR, destination, "into-cloud", {"bootstrap.servers": kafka.SOURCE.bootstrap}
    )
    create_mirror(ACTOR, link, topic_name)

    rounds()

    assert link.engine == "cloud" and _handed_to(link) == {"cloud"}
    supervise.stop(link)  # its engine runs nowhere: it returns at once
    assert _handed_to(link) == set()


def test_a_source_initiated_link_waits_for_its_source_half_then_the_sources_engine_copies_it(
    api, zoned, make_topic, topic_name, rounds, client_as
):
    source, destination = zoned
    operator = api("operator")
    make_topic(kafka.SOURCE, topic_name)

    made = _create(operator, destination, "hybrid", INBOUND, source_cluster_id=source.cluster_id)
    assert made.status_code == 204, made.content
    link = ClusterLink.objects.get(name="hybrid")
    # Read with the source's registered link principal, at its registered address, by the
    # engine beside it; nothing copies before the source half.
    assert link.engine == "on-prem" and link.source_initiated and link.waits_for_source_half
    assert link.configs["bootstrap.servers"] == source.bootstrap_servers
    create_mirror(ACTOR, link, topic_name)
    rounds()
    assert _handed_to(link) == set()
    page = client_as("viewer").get(reverse("link-detail", args=[destination.name, "hybrid"]))
    assert 'data-engine="on-prem"' in page.content.decode()
    assert 'id="waits-for-source-half"' in page.content.decode()

    def make_source_half():
        return _create(
            operator,
            source,
            "hybrid",
            _source_half(destination),
            destination_cluster_id=destination.cluster_id,
        )

    half = make_source_half()

    assert half.status_code == 204, half.content
    link.refresh_from_db()
    assert not link.waits_for_source_half
    assert link.config("remote.link.connection.mode") == "OUTBOUND"
    rounds()
    assert _handed_to(link) == {"on-prem"}
    page = client_as("viewer").get(reverse("link-detail", args=[destination.name, "hybrid"]))
    assert 'id="waits-for-source-half"' not in page.content.decode()
    shown = operator.get(f"/kafka/v3/clusters/{destination.cluster_id}/links/hybrid").json()
    assert shown["engine"] == "on-prem"
    events = AuditEvent.objects.filter(action="link.create", result="ok").order_by("pk")
    assert "on-prem copies the link" in events.last().message

    again = make_source_half()
    assert again.status_code == 200, again.content
    assert "Nothing new was made" in again["Warning"]
    assert ClusterLink.objects.filter(name="hybrid").count() == 1


def test_the_source_lists_describes_and_deletes_its_source_half_as_confluents_tools_do(
    api, typed, zoned, rounds
):
    source, destination = zoned
    operator = api("operator")
    made = _create(operator, destination, "hybrid", INBOUND, source_cluster_id=source.cluster_id)
    assert made.status_code == 204, made.content
    on_source = f"/kafka/v3/clusters/{source.cluster_id}/links"
    assert operator.get(on_source).json()["data"] == []  # no source half yet
    half = _create(
        operator,
        source,
        "hybrid",
        _source_half(destination),
        destination_cluster_id=destination.cluster_id,
    )
    assert half.status_code == 204, half.content

    listed = conforms(operator.get(on_source), "ListLinksResponseDataList")["data"]
    described = conforms(operator.get(f"{on_source}/hybrid"), "ListLinksResponseData")

    assert [(d["link_name"], d["source_cluster_id"]) for d in listed] == [("hybrid", None)]
    assert listed[0]["destination_cluster_id"] == destination.cluster_id
    assert described["destination_cluster_id"] == destination.cluster_id
    assert described["metadata"]["self"].endswith(f"/clusters/{source.cluster_id}/links/hybrid")
    into = operator.get(f"/kafka/v3/clusters/{destination.cluster_id}/links/hybrid").json()
    assert into["source_cluster_id"] == source.cluster_id
    assert into["destination_cluster_id"] is None
    shown = typed(f"kafka-cluster-links --bootstrap-server {kafka.SOURCE.bootstrap} --list")
    assert f"remote cluster ID: '{destination.cluster_id}'" in shown.stdout, shown.stderr

    checked = operator.delete(f"{on_source}/hybrid?validate_only=true")
    assert checked.status_code == 204
    assert not ClusterLink.objects.get(name="hybrid").waits_for_source_half
    deleted = typed(
        f"kafka-cluster-links --bootstrap-server {kafka.SOURCE.bootstrap} --delete --link hybrid"
    )

    assert deleted.returncode == 0, deleted.stderr
    assert (
        "its destination half, on " in deleted.stdout
        and "waits for a source half" in deleted.stdout
    )
    link = ClusterLink.objects.get(name="hybrid")  # kept, on its destination
    assert link.waits_for_source_half
    rounds()
    assert _handed_to(link) == set()
    event = AuditEvent.objects.filter(action="link.delete", result="ok").get()
    assert event.target == f"link hybrid on {source.name}"
    assert "waits for its source half again" in event.message
    assert operator.get(on_source).json()["data"] == []
    again = operator.delete(f"{on_source}/hybrid")
    assert again.status_code == 404
    assert "No cluster link named 'hybrid'" in again.json()["message"]


@pytest.mark.parametrize(
    "configs,body,expected",
    [
        # the source half before its destination half
        ("source-half", {"destination": True}, "create its destination half there first"),
        ("source-half", {}, "give its id as destination_cluster_id"),
        # the destination half from a cluster not registered
        ("inbound", {"source_cluster_id": "no-such-cluster"}, "register the source cluster"),
        (
            "inbound-bidirectional",
            {"source": True},
            "connection.mode=INBOUND is a source-initiated link's destination half",
        ),
        ("read-only", {"source": True}, "remote.link.connection.mode is read-only"),
    ],
)
def test_source_initiated_mistakes_are_refused_in_words_and_make_nothing(
    api, zoned, configs, body, expected
):
    source, destination = zoned
    typed = {
        "source-half": _source_half(destination),
        "inbound": INBOUND,
        "inbound-bidirectional": [*INBOUND, {"name": "link.mode", "value": "BIDIRECTIONAL"}],
        "read-only": [*INBOUND, {"name": "remote.link.connection.mode", "value": "OUTBOUND"}],
    }[configs]
    if body.pop("destination", False):
        body["destination_cluster_id"] = destination.cluster_id
    if body.pop("source", False):
        body["source_cluster_id"] = source.cluster_id
    on = source if configs == "source-half" else destination

    answer = _create(api("operator"), on, "mistaken", typed, **body)

    assert answer.status_code in (400, 409), answer.content
    assert expected in answer.json()["message"], answer.json()
    assert not ClusterLink.objects.exists()
    assert AuditEvent.objects.get(action="link.create").result == "refused"


def test_link_mode_source_on_its_own_says_where_a_source_half_is_made(zoned):
    _, destination = zoned
    with pytest.raises(ReplicationError, match="create it on the source cluster naming"):
        create_link(ACTOR, destination, "x", {"bootstrap.servers": "h:1", "link.mode": "SOURCE"})


def test_a_cluster_is_registered_with_its_zones_engine_and_a_bad_name_is_refused(
    memory_clusters, transactional_db, zone_keeper
):
    with pytest.raises(ReplicationError, match="Invalid engine name 'On Prem'"):
        register_cluster(ACTOR, "source", kafka.SOURCE.bootstrap, {}, engine="On Prem")
    # Reached in its zone, by the zone's keeper: none serves yet.
    with pytest.raises(ReplicationError, match="start `manage.py engine` with ISTHMUS_ENGINE_NAME"):
        register_cluster(ACTOR, "source", kafka.SOURCE.bootstrap, {}, engine="on-prem")
    assert not KafkaCluster.objects.exists()
    zone_keeper("on-prem")
    made = register_cluster(ACTOR, "source", kafka.SOURCE.bootstrap, {}, engine="on-prem")
    assert KafkaCluster.objects.get(pk=made.pk).engine == "on-prem"
    assert AuditEvent.objects.get(result="ok").after["engine"] == "on-prem"


def test_keeping_an_engine_without_its_name_says_which_to_give():
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="Set ISTHMUS_ENGINE_NAME to the engine this host keeps"):
        call_command("engine")


def test_kafka_cluster_links_makes_both_halves_as_confluents_recipe_types_them(typed, zoned):
    source, destination = zoned
    inbound = typed(
        f"kafka-cluster-links --bootstrap-server {kafka.DESTINATION.bootstrap} --create "
        f"--link hybrid --cluster-id {source.cluster_id} --config connection.mode=INBOUND"
    )
    assert inbound.returncode == 0, inbound.stderr
    assert ClusterLink.objects.get(name="hybrid").waits_for_source_half
    half = (
        f"kafka-cluster-links --bootstrap-server {kafka.SOURCE.bootstrap} --create --link "
        f"hybrid --cluster-id {destination.cluster_id} "
        f"--config link.mode=SOURCE,bootstrap.servers={kafka.DESTINATION.bootstrap}"
    )

    made = typed(half)

    assert made.returncode == 0, made.stderr
    assert made.stdout == "Cluster link 'hybrid' creation successfully completed.\n"
    link = ClusterLink.objects.get(name="hybrid")
    assert not link.waits_for_source_half and link.engine == "on-prem"
    again = typed(half)
    assert again.returncode == 0, again.stderr
    assert "has its source half already. Nothing new was made." in again.stdout


def test_the_data_plane_page_shows_the_consoles_engine_and_each_zones(zoned, client_as):
    page = client_as("viewer").get(reverse("data-plane")).content.decode()
    assert page.index("The console's own engine") < page.index("Engine on-prem")
    assert 'id="engine-on-prem" data-state="STOPPED"' in page
    assert "<code>ISTHMUS_ENGINE_NAME=on-prem</code>" in page
    assert '<dd id="keeper-on-prem" data-serving="true">serving the console' in page


def test_metrics_show_a_zones_engine_by_its_name_and_the_consoles_unlabelled(zoned, client, users):
    client.force_login(users["viewer"])
    metrics = client.get(reverse("metrics")).content.decode()
    assert "\nisthmus_engine_running{} 0\n" in metrics
    assert '\nisthmus_engine_running{engine="on-prem"} 0\n' in metrics
    assert '\nisthmus_zone_keeper_serving{engine="on-prem"} 1\n' in metrics
    assert "isthmus_zone_keeper_serving{}" not in metrics  # the console's own has none


def test_each_half_of_a_bidirectional_link_is_copied_beside_its_own_destination(api, zoned):
    source, destination = zoned
    answer = _create(
        api("operator"),
        destination,
        "both",
        [{"name": "link.mode", "value": "BIDIRECTIONAL"}],
        remote_cluster_id=source.cluster_id,
    )
    assert answer.status_code == 204, answer.content
    halves = {h.destination.name: h.engine for h in ClusterLink.objects.filter(name="both")}
    assert halves == {"destination": "", "source": "on-prem"}
    shown = api("viewer").get(f"/kafka/v3/clusters/{destination.cluster_id}/links/both").json()
    assert (shown["engine"], shown["other_half"]["engine"]) == ("", "on-prem")
