"""A merge flow's page: what it copies and into what, that offsets are not preserved, its
partition mapping in words, and the actions only for a role that may take them (the rows
alone: nothing here reaches a cluster)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, MergeFlow
from replication.topics import merge_flows

pytestmark = pytest.mark.django_db


@pytest.fixture
def flow(make_flow) -> MergeFlow:
    return make_flow("topic2", "topic2.replica", MergeFlow.Mapping.BY_KEY)


def page(client, flow: MergeFlow, view: str = "flow-detail") -> str:
    url = reverse(view, args=[flow.destination.name, flow.link.name, flow.name])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_a_flows_page_says_what_it_copies_and_that_offsets_are_not_preserved(client_as, flow):
    shown = page(client_as("operator"), flow)
    assert "<code>topic2</code> from the link's source into <code>topic2.replica</code>" in shown
    assert "offsets are not preserved" in shown
    assert "by key, as Kafka's default partitioner places each key" in shown
    assert reverse("flow-pause", args=["dc2", "from-dc1", flow.name]) in shown
    assert reverse("flow-delete", args=["dc2", "from-dc1", flow.name]) in shown


def test_a_flows_page_refreshes_its_progress_without_reloading(client_as, flow):
    shown = page(client_as("viewer"), flow)
    assert 'id="flow-live"' in shown and 'hx-trigger="every 3s"' in shown
    url = reverse("flow-detail", args=["dc2", "from-dc1", flow.name])
    part = client_as("viewer").get(url, headers={"HX-Request": "true"}).content.decode()
    assert part.lstrip().startswith('<div id="flow-live"') and "<html" not in part
    assert 'id="records">0 records' in part


def test_a_by_key_flow_says_its_groups_are_not_synced(client_as, flow):
    shown = page(client_as("viewer"), flow)
    assert "Its partitions are mapped by key" in shown.split('id="offsets-refused"')[1]


def test_a_viewer_sees_the_flow_without_its_actions(client_as, flow):
    shown = page(client_as("viewer"), flow)
    assert "topic2.replica" in shown
    assert reverse("flow-pause", args=["dc2", "from-dc1", flow.name]) not in shown
    assert (
        client_as("viewer")
        .post(reverse("flow-pause", args=["dc2", "from-dc1", flow.name]))
        .status_code
        == 403
    )


def test_deleting_a_flow_asks_for_its_name_and_says_the_topic_stays(client_as, flow):
    shown = page(client_as("operator"), flow, "flow-delete")
    assert "<code>topic2.replica</code> stays on dc2, with every record copied into it" in shown
    assert 'name="confirm_name"' in shown and 'name="reason"' in shown
    # The link's policy asks an approver: records stop arriving in a topic consumers read.
    assert "needs 1 approval from someone other than you" in shown
    assert ">Ask for approval</button>" in shown


def test_an_unknown_flow_is_a_404_saying_so(client_as, flow):
    url = reverse("flow-detail", args=["dc2", "from-dc1", "nope"])
    response = client_as("viewer").get(url)
    assert response.status_code == 404
    assert "has no merge flow named" in response.content.decode()


@pytest.mark.parametrize("topic", ["_schemas", "_confluent-command"])
def test_a_merge_flow_into_or_from_a_well_known_internal_topic_is_refused(users, make_flow, topic):
    """Schema Registry's store and Confluent's command topics belong to their services: a flow
    writing into them would corrupt them. Refused before any cluster is asked, and audited."""
    link = make_flow("seed", "seed", MergeFlow.Mapping.ONE_TO_ONE).link
    actor = audit.Actor(user=users["operator"], name="operator")
    for source, destination in ((topic, "copy"), ("orders", topic)):
        with pytest.raises(ReplicationError, match="internal topic"):
            merge_flows.create_flow(actor, link, source, destination)
    assert list(MergeFlow.objects.values_list("source_topic", flat=True)) == ["seed"]
    refused = AuditEvent.objects.filter(action="flow.create", result="refused")
    assert refused.count() == 2
