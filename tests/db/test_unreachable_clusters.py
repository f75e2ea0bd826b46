"""A cluster that does not answer is at the top of the overview, on in-memory clusters: counted
as trouble, named in a banner with the links it stops, and marked on the links to and from it
(the link list and the link's page), from what the console already knows (the beat's probe
kept in Redis, the links' availability checks), never from a request to a cluster per page
view. /metrics says the same, and counts the requests waiting for approval."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from replication.actions import approvals
from replication.core.redis_channel import client
from replication.governance import audit
from replication.kafka import reachability
from replication.models import ApprovalRequest, ClusterLink
from replication.overview.metrics import prometheus_text
from replication.sync import syncers
from replication.tasks import refresh_clusters
from replication.topics.mirrors import create_mirror

pytestmark = [pytest.mark.django_db]

SETUP = audit.Actor.system("tests")


@pytest.fixture(autouse=True)
def no_readings(light_stack):
    client().delete(reachability.KEY)
    yield
    client().delete(reachability.KEY)


def _page(client, name: str, *args) -> str:
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


def test_a_stopped_source_is_trouble_at_the_top_of_the_overview_and_on_its_links(
    make_link, make_topic, topic_name, memory_clusters, client_as
):
    topic = make_topic(kafka.SOURCE, topic_name)
    link = make_link(name=f"l-{topic_name[-8:]}")
    create_mirror(SETUP, link, topic)
    viewer = client_as("viewer")
    refresh_clusters()  # the beat's probe, every 30 s: both answer
    assert 'id="unreachable-clusters"' not in _page(viewer, "dashboard")
    assert '<span class="stat-value" id="stat-troubled">0</span>' in _page(viewer, "dashboard")

    memory_clusters["source"].down = True
    refresh_clusters()

    page = _page(viewer, "dashboard")
    banner = page[page.index('id="unreachable-clusters"') :]
    banner = banner[: banner.index("</div>")]
    assert "A cluster does not answer" in banner and "Check that the brokers run" in banner
    assert '<li data-cluster="source"><strong>source</strong> since ' in banner
    assert f"links from it: {link.name}" in banner and "no broker answered" in banner
    assert page.index('id="unreachable-clusters"') < page.index('id="stat-links"')
    # Its mirror is not copying: counted in trouble, and says why.
    assert '<span class="stat-value" id="stat-troubled">1</span>' in page
    assert "Not copying: the link&#x27;s source &#x27;source&#x27; does not answer." in page
    mark = '<span class="badge bad" data-unreachable>source &#x27;source&#x27; does not answer'
    assert mark in page
    assert mark in _page(viewer, "links")
    detail = _page(viewer, "link-detail", "destination", link.name)
    assert 'id="link-unreachable"' in detail and "its source &#x27;source&#x27; does not" in detail

    # The pages show the probe's reading and ask no cluster: the source answering again changes
    # nothing until the next probe, which clears it.
    memory_clusters["source"].down = False
    assert 'id="unreachable-clusters"' in _page(viewer, "dashboard")
    refresh_clusters()
    page = _page(viewer, "dashboard")
    assert 'id="unreachable-clusters"' not in page and "data-unreachable" not in page


def test_a_link_failing_its_availability_check_marks_its_source_before_it_is_unavailable(
    make_link, memory_clusters, client_as
):
    """No probe reading yet (the beat has not run): the link's own check says it."""
    link = make_link(name="checked")
    other = make_link(name="passing")
    memory_clusters["source"].down = True
    syncers.check_source(link, timezone.now())
    link.refresh_from_db()
    assert link.state == ClusterLink.State.ACTIVE and link.availability_failures == 1

    page = _page(client_as("viewer"), "dashboard")
    assert "Link checked could not reach it in its last 1 availability check(s); after 5" in page
    assert "links from it: checked, passing" in page
    # Its sibling from the same source is marked too, though its own check has not run.
    row = page[page.index(f'data-link="{other.name}"') :]
    assert "source &#x27;source&#x27; does not answer" in row[: row.index("</tr>")]
    assert 'isthmus_cluster_reachable{cluster="source"} 0' in prometheus_text()


def test_metrics_say_which_clusters_answer_and_what_waits_for_approval(
    make_link, make_topic, topic_name, memory_clusters, users
):
    topic = make_topic(kafka.SOURCE, topic_name)
    link = make_link()
    create_mirror(SETUP, link, topic)
    text = prometheus_text()
    assert "isthmus_cluster_reachable{" not in text  # not probed yet: nothing claimed
    assert 'isthmus_approvals_pending{action="promote"} 0' in text
    assert "isthmus_approval_oldest_pending_seconds{} 0\n" in text

    operator = audit.Actor(user=users["operator"], name="operator")
    approvals.submit(operator, link, "promote", [topic], "moving the consumers")
    ApprovalRequest.objects.update(created_at=timezone.now() - timedelta(minutes=90))
    memory_clusters["destination"].down = True
    refresh_clusters()

    text = prometheus_text()
    assert 'isthmus_cluster_reachable{cluster="source"} 1' in text
    assert 'isthmus_cluster_reachable{cluster="destination"} 0' in text
    assert 'isthmus_approvals_pending{action="promote"} 1' in text
    assert 'isthmus_approvals_pending{action="failover"} 0' in text
    oldest = float(text.split("isthmus_approval_oldest_pending_seconds{} ")[1].split()[0])
    assert 5390 < oldest < 5500


def test_a_probe_reading_keeps_the_time_the_cluster_stopped_answering(
    registered_clusters, memory_clusters
):
    from replication.kafka.clusters import probe_clusters

    source = registered_clusters["source"].cluster_id
    memory_clusters["source"].down = True
    reachability.keep(probe_clusters(), now=1000.0)
    reachability.keep(probe_clusters(), now=1030.0)
    reading = reachability.latest()[source]
    assert (reading.reachable, reading.at, reading.since) == (False, 1030.0, 1000.0)
    assert "Check that the brokers are running" in reading.error
    memory_clusters["source"].down = False
    reachability.keep(probe_clusters(), now=1060.0)
    assert reachability.latest()[source].since == 1060.0
    assert reachability.latest()[registered_clusters["destination"].cluster_id].since == 1000.0
