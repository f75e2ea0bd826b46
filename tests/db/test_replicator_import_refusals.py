"""A Replicator configuration pasted on the console's import page or sent to
`POST …/flows:import-replicator` that Python's readers give up on (nesting past the recursion
limit, a 5,000-digit number) or a `topic.regex` RE2 cannot run: refused in words, a 400 in the
API and the form again on the page, never a 500, and nothing made. Every refusal here comes
before the source is asked for its topics, so no cluster is needed."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from replication.models import ApprovalRequest, ClusterLink, KafkaCluster, MergeFlow

pytestmark = [pytest.mark.db, pytest.mark.django_db]

DEEP = "[" * 100_000
LONG_NUMBER = '{"config": {"topic.whitelist": ' + "9" * 5000 + "}}"
BACKTRACKS = json.dumps(
    {
        "name": "r",
        "config": {
            "topic.regex": "(?=orders)orders.*",
            "src.kafka.bootstrap.servers": "127.0.0.1:2",
        },
    }
)
CASES = [
    (DEEP, "nested too deeply"),
    (LONG_NUMBER, "a number too long"),
    (BACKTRACKS, "a regular expression Isthmus cannot run"),
]


@pytest.fixture
def destination() -> KafkaCluster:
    cluster = KafkaCluster.objects.create(
        name="dc2", bootstrap_servers="127.0.0.1:1", cluster_id="dc2-id"
    )
    ClusterLink.objects.create(
        name="from-dc1",
        destination=cluster,
        source_cluster_id="x",
        configs={"bootstrap.servers": "127.0.0.1:2"},
    )
    return cluster


def nothing_made() -> bool:
    return not MergeFlow.objects.exists() and not ApprovalRequest.objects.exists()


@pytest.mark.parametrize(("text", "said"), CASES)
def test_the_api_refuses_what_it_cannot_read_with_a_400_in_words(
    client_as, destination, text, said
):
    url = f"/kafka/v3/clusters/{destination.cluster_id}/flows:import-replicator"
    for validate_only in ("true", "false"):
        response = client_as("operator").post(
            f"{url}?validate_only={validate_only}",
            json.dumps({"configuration": text}),
            content_type="application/json",
        )
        assert response.status_code == 400, response.content[:300]
        assert said in response.json()["message"]
        assert "Traceback" not in response.json()["message"]
    assert nothing_made()


@pytest.mark.parametrize(("text", "said"), CASES)
def test_the_import_page_shows_the_refusal_and_keeps_the_form(client_as, destination, text, said):
    url = reverse("replicator-import", args=[destination.name])
    for op in ("preview", "create"):
        response = client_as("operator").post(url, {"configuration": text, "op": op})
        assert response.status_code == 200
        page = response.content.decode()
        assert 'id="import-error"' in page and said in page
    assert nothing_made()
