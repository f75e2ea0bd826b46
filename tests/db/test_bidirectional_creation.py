"""A bidirectional link created through the REST API as Confluent's tools create it (issue 47):
remote_cluster_id with link.mode=BIDIRECTIONAL makes both halves, and the second side's create
of the same link, which Confluent's recipe types on the other cluster, makes nothing and says so,
or is refused naming what differs. In-memory clusters; the real brokers and a reverse on such a
link: tests/integration/test_bidirectional_rest.py."""

import pytest

from replication.governance import audit
from replication.models import AuditEvent, ClusterLink
from replication.topics.link_creation import create_link

BIDI = {"name": "link.mode", "value": "BIDIRECTIONAL"}


@pytest.fixture
def clusters(registered_clusters):
    return registered_clusters["source"], registered_clusters["destination"]


def _create(client, cluster, name: str, **body):
    return client.post(
        f"/kafka/v3/clusters/{cluster.cluster_id}/links?link_name={name}",
        {"configs": [BIDI], **body},
        content_type="application/json",
    )


def test_remote_cluster_id_with_bidirectional_makes_both_halves(api, clusters):
    source, destination = clusters
    answer = _create(api("operator"), destination, "both", remote_cluster_id=source.cluster_id)
    assert answer.status_code == 204, answer.content
    halves = ClusterLink.objects.filter(name="both")
    assert {(h.destination.cluster_id, h.source_cluster_id) for h in halves} == {
        (destination.cluster_id, source.cluster_id),
        (source.cluster_id, destination.cluster_id),
    }


def test_the_second_sides_create_makes_nothing_and_says_so(api, clusters):
    source, destination = clusters
    client = api("operator")
    assert _create(client, destination, "twice", remote_cluster_id=source.cluster_id).status_code
    first = client.get(f"/kafka/v3/clusters/{destination.cluster_id}/links/twice").json()
    events = AuditEvent.objects.count()

    answer = _create(
        client,
        source,
        "twice",
        remote_cluster_id=destination.cluster_id,
        cluster_link_id=first["cluster_link_id"],
    )

    assert answer.status_code == 200, answer.content
    assert answer.json()["kind"] == "KafkaLinkData"
    assert answer.json()["source_cluster_id"] == destination.cluster_id
    assert "Nothing new was made" in answer["Warning"]
    assert ClusterLink.objects.filter(name="twice").count() == 2
    event = AuditEvent.objects.order_by("pk").last()
    assert event is not None
    assert (event.action, event.result) == ("link.create", AuditEvent.Result.OK)
    assert "existing half" in event.message and AuditEvent.objects.count() == events + 1


@pytest.mark.parametrize(
    "body,configs,expected",
    [
        ({}, [{"name": "metadata.max.age.ms", "value": "7000"}], "metadata.max.age.ms ('7000'"),
        ({"cluster_link_id": "AAAAAAAAAAAAAAAAAAAAAA"}, [], "its cluster_link_id is"),
    ],
)
def test_a_second_create_that_differs_is_refused_saying_what(
    api, clusters, body, configs, expected
):
    source, destination = clusters
    client = api("operator")
    _create(client, destination, "differs", remote_cluster_id=source.cluster_id)
    answer = client.post(
        f"/kafka/v3/clusters/{source.cluster_id}/links?link_name=differs",
        {"configs": [BIDI, *configs], "remote_cluster_id": destination.cluster_id, **body},
        content_type="application/json",
    )
    assert answer.status_code == 409, answer.content
    assert expected in answer.json()["message"]
    assert "Nothing was changed" in answer.json()["message"]
    refused = AuditEvent.objects.filter(action="link.create", result=AuditEvent.Result.REFUSED)
    assert refused.exists()


def test_a_one_way_link_of_the_name_is_not_taken_for_a_half(api, clusters):
    source, destination = clusters
    create_link(audit.Actor.system("tests"), source, "oneway", {}, source=destination)
    answer = _create(api("operator"), source, "oneway", remote_cluster_id=destination.cluster_id)
    assert answer.status_code == 409
    assert "a one-way link (link.mode DESTINATION)" in answer.json()["message"]


@pytest.mark.parametrize(
    "body,expected",
    [
        (
            {"configs": [], "remote_cluster_id": "x"},
            "remote_cluster_id names the other cluster of a bidirectional link, and this "
            "link's link.mode is DESTINATION: add link.mode=BIDIRECTIONAL",
        ),
        ({"configs": [], "destination_cluster_id": "x"}, "give link.mode=SOURCE"),
        (
            {"configs": [], "cluster_link_id": "AAAAAAAAAAAAAAAAAAAAAA"},
            "cluster_link_id is for the second half of a bidirectional link",
        ),
        (
            {
                "configs": [BIDI],
                "cluster_link_id": "AAAAAAAAAAAAAAAAAAAAAA",
                "remote_cluster_id": "",
            },
            "register the source cluster first",
        ),
    ],
)
def test_confluents_fields_that_isthmus_cannot_honour_are_refused_in_words(
    api, clusters, body, expected
):
    _, destination = clusters
    answer = api("operator").post(
        f"/kafka/v3/clusters/{destination.cluster_id}/links?link_name=words",
        body,
        content_type="application/json",
    )
    assert answer.status_code in (400, 409), answer.content
    assert expected in answer.json()["message"]
    assert not ClusterLink.objects.filter(name="words").exists()
