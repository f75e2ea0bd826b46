"""The home page, on in-memory clusters: each link with its mirrors by state, its worst lag and
what it copies; mirrors in trouble first; requests waiting for approval; recent activity; and an
empty state that says what to do."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from devstack import kafka
from replication.actions import approvals
from replication.governance import audit
from replication.models import MirrorTopic
from replication.states.mirror_states import move
from replication.topics.mirrors import create_mirror

pytestmark = [pytest.mark.django_db]

SETUP = audit.Actor.system("tests")


def _page(client, htmx: bool = False) -> str:
    response = client.get(reverse("dashboard"), **({"HTTP_HX_REQUEST": "true"} if htmx else {}))
    assert response.status_code == 200
    return response.content.decode()


def test_with_no_links_the_overview_says_what_to_do_next(registered_clusters, client_as):
    page = _page(client_as("operator"))
    assert "No links yet" in page and "run the share-data scenario" in page
    assert reverse("link-create") in page
    viewer = _page(client_as("viewer"))
    assert "run the share-data scenario" in viewer and "create one" not in viewer


def test_the_overview_puts_failing_mirrors_first_and_shows_requests_and_activity(
    make_link, make_topic, topic_name, client_as, users
):
    quiet, broken = (make_topic(kafka.SOURCE, f"{topic_name}-{n}") for n in ("quiet", "broken"))
    healthy = make_link({"cluster.link.paused": "true"}, name=f"a-{topic_name[-8:]}")
    troubled = make_link({"cluster.link.paused": "true"}, name=f"b-{topic_name[-8:]}")
    create_mirror(SETUP, healthy, quiet)
    failing = create_mirror(SETUP, troubled, broken)
    move(failing, "fail", MirrorTopic.State.FAILED, error_message="The source topic was deleted.")
    operator = audit.Actor(user=users["operator"], name="operator")
    approvals.submit(operator, healthy, "promote", [quiet], "moving the consumers")

    page = _page(client_as("viewer"))

    # The link with a failed mirror comes first, though its name sorts after the other's.
    assert page.index(f'data-link="{troubled.name}"') < page.index(f'data-link="{healthy.name}"')
    assert 'id="troubled-mirrors"' in page and "The source topic was deleted." in page
    assert '<span class="stat-value" id="stat-troubled">1</span>' in page
    assert '<span class="stat-value" id="stat-pending">1</span>' in page
    assert "Promote" in page and "asked by operator" in page
    assert '<span class="count" data-state="LINK_PAUSED">1 link paused</span>' in page
    assert 'id="stat-mirrors">2</span><span class="stat-label">mirror topics</span>' in page
    assert "mirror.create" in page and "request.promote" in page
    # The live part refreshes by itself; the clusters' reachability loads into the page.
    assert 'hx-trigger="every 5s"' in _page(client_as("viewer"), htmx=True)
    assert f'hx-get="{reverse("clusters")}" hx-trigger="load"' in page


def test_a_mirror_whose_source_topic_is_gone_is_in_trouble_with_the_time_it_fails_at(
    make_link, make_topic, topic_name, client_as
):
    topic = make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.paused": "true", "cluster.link.retry.timeout.ms": "600000"})
    mirror = create_mirror(SETUP, link, topic)
    gone_since = datetime(2026, 11, 24, 8, 0, 0, tzinfo=UTC)
    MirrorTopic.objects.filter(pk=mirror.pk).update(source_missing_since=gone_since)

    page = _page(client_as("viewer"))
    assert '<span class="stat-value" id="stat-troubled">1</span>' in page
    said = (
        f"Source topic &#x27;{topic}&#x27; has been missing since 2026-11-24 08:00:00 UTC; the "
        "mirror fails at 2026-11-24 08:10:00 UTC unless it comes back"
    )
    assert f'data-mirror="{topic}"' in page and said in page
    mirror_page = client_as("viewer").get(
        reverse("mirror-detail", args=[mirror.destination.name, topic])
    )
    assert 'id="source-missing"' in mirror_page.content.decode()
