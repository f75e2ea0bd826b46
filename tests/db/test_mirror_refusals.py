"""Mirrors the API refuses as the console does (issue 23, item 4): of Kafka's internal topics,
on a link whose address now reaches another cluster, and lists of names past the cap."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from devstack import kafka
from replication.actions import approvals
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.link_creation import create_link
from tests import memory_kafka


@pytest.fixture
def operator_api(api) -> Client:
    return api("operator")


def _mirrors_url(link) -> str:
    return f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/mirrors"


@pytest.mark.parametrize("internal", ["__consumer_offsets", "_schemas", "_confluent-command"])
def test_an_internal_topic_is_refused_by_the_api_and_the_console(
    make_link, operator_api, client_as, internal
):
    link = make_link({"cluster.link.paused": "true"})
    answer = operator_api.post(
        _mirrors_url(link),
        json.dumps({"source_topic_name": internal}),
        content_type="application/json",
    )
    assert answer.status_code == 400, answer.content
    assert "internal topic" in answer.json()["message"]
    page = client_as("operator").post(
        reverse("mirror-create", args=["destination", link.name]), {"source_topic": internal}
    )
    assert "internal topic" in page.content.decode()
    assert not MirrorTopic.objects.exists()


def test_a_mirror_on_a_link_whose_address_reaches_another_cluster_is_refused(
    registered_clusters, make_topic, topic_name, operator_api
):
    topic = make_topic(kafka.SOURCE, topic_name)
    # A link made for another cluster id (validate_link=false, as the API allows) whose
    # address reaches the source: what a rebuilt cluster or a moved address looks like.
    link = create_link(
        audit.Actor.system("tests"),
        registered_clusters["destination"],
        f"stale-{uuid.uuid4().hex[:6]}",
        {"bootstrap.servers": kafka.SOURCE.bootstrap, "cluster.link.paused": "true"},
        source_cluster_id="AAAAAAAAAAAAAAAAAAAAAA",
        validate_link=False,
    )
    answer = operator_api.post(
        _mirrors_url(link),
        json.dumps({"source_topic_name": topic}),
        content_type="application/json",
    )
    assert answer.status_code == 409, answer.content
    message = answer.json()["message"]
    assert "AAAAAAAAAAAAAAAAAAAAAA" in message and "no mirror was created" in message
    assert not MirrorTopic.objects.exists()
    assert topic not in memory_kafka.cluster(kafka.DESTINATION.bootstrap).topics


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_a_list_of_names_past_the_cap_is_refused_at_once(make_link, operator_api, action):
    link = make_link({"cluster.link.paused": "true"})
    names = [f"t{i}" for i in range(5000)]
    answer = operator_api.post(
        f"{_mirrors_url(link)}:{action}",
        json.dumps({"mirror_topic_names": names}),
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert f"at most {approvals.MAX_TOPICS}" in answer.json()["message"]
    assert len(answer.content) < 1000
