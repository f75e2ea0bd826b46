"""The home page on the real clusters: each link with its mirrors by state, its worst lag and
what it copies; mirrors in trouble first; requests waiting for approval; recent activity; and
an empty state that says what to do."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from django.urls import reverse

from devstack import kafka
from replication.observe import history, lag
from replication.topics.mirrors import create_mirror
from tests.db.test_dashboard import SETUP, _page
from tests.mirror_checks import run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_the_overview_shows_a_copying_link_caught_up_with_what_it_copies(
    make_link, make_topic, topic_name, client_as
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(500):
        producer.produce(topic_name, value=b"x" * 100, partition=i % 2)
    assert producer.flush(30) == 0
    link = make_link()
    mirror = create_mirror(SETUP, link, topic_name)
    client = client_as("viewer")
    # Until its lag is first read, the mirror is "starting", not ACTIVE with -1 offsets.
    listed = client.get(reverse("mirrors")).content.decode()
    assert 'title="Not read from both clusters yet: within 10 s">starting<' in listed
    starting = client.get(reverse("mirror-detail", args=["destination", topic_name])).content
    assert b"The link&#x27;s stream is not running yet: the supervisor starts it within 2 s." in (
        starting
    )
    run_until_copied(link, [mirror])
    lag.sample_all()  # as the beat does every 10 s (its worker cannot see this test's rows)

    def row() -> str:
        page = _page(client)
        found = page[page.index(f'data-link="{link.name}"') :]
        return found[: found.index("</tr>")]

    seen = row()
    assert '<span class="badge ok">caught up</span>' in seen, seen
    page = _page(client)
    assert "record/s" in row() or "records/s" in row()  # "1 record/s"
    assert '<span class="count" data-state="ACTIVE">1 active</span>' in row()
    assert '<span class="stat-value" id="stat-lag">0</span>' in page

    # The lists and the mirror's page say it too, in plain words.
    for url in (reverse("links"), reverse("mirrors")):
        assert '<span class="badge ok">caught up</span>' in client.get(url).content.decode()
    detail = client.get(reverse("mirror-detail", args=["destination", topic_name])).content
    assert b"<th>Source end at last fetch</th>" in detail and b"LastFetch" not in detail
    # Caught up, Promote is the primary action for whoever may ask for it.
    operator = client_as("operator")
    ready = operator.get(reverse("mirror-detail", args=["destination", topic_name])).content
    assert b'id="safe-to-promote">Caught up with its source: safe to promote.' in ready
    assert b'<a class="button" id="promote"' in ready

    # The charts' history: an hour of points every 10 s, a day of points every 5 minutes
    # (the worst lag within each), both bounded.
    now = time.time()
    samples = history.FINE_KEEP + 5
    for i in range(samples):
        lag_now = 7 if i == samples - 40 else 0
        history.record(link, {topic_name: (lag_now, lag_now, -1)}, now - (samples - i) * 10)
    series = history.link_series(link, "1h")
    assert len(series["lag"]) == history.FINE_KEEP
    assert series["lag"][-1].value == 0
    day = history.mirror_series(mirror, "24h")["max_lag"]
    # 3,650 s of points touch 13 five-minute periods, or 14 when the first falls in a period's
    # last 50 s.
    assert 11 <= len(day) <= 14 and max(s.value for s in day) == 7
    charts = client.get(reverse("link-charts", args=[link.destination.name, link.name]))
    text = charts.content.decode()
    assert text.count("<polyline") == 3 and 'hx-trigger="every 10s"' in text
    # Refreshing the charts refreshes the stream's state up the page; the mirror's partition
    # table its heading's state badge.
    assert '<dd id="stream" hx-swap-oob="true" data-state="RUNNING">RUNNING' in text
    table = client.get(
        reverse("mirror-detail", args=["destination", topic_name]), HTTP_HX_REQUEST="true"
    )
    assert (
        '<span id="mirror-state" hx-swap-oob="true"><span class="badge ok" data-state="ACTIVE">'
        in table.content.decode()
    )
    mirror_page = client.get(reverse("mirror-detail", args=["destination", topic_name]))
    assert 'data-chart="Largest partition lag"' in mirror_page.content.decode()
