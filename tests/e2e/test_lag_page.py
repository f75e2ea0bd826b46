"""Lag that tells the truth: a 100,000-record backlog shows on the mirror's chart, in its
partition table, on the overview and in /metrics alike, while the link's stream does not run,
and goes to 0 once it copies, the chart keeping the peak. In time too: the paused link breaches
its RPO target, which the overview names among the mirrors in trouble until it copies."""

import re

import pytest
from confluent_kafka import Producer
from playwright.sync_api import expect

from devstack import kafka
from infra.processes import wait_for
from replication.governance import audit
from replication.models import ClusterLink
from replication.observe import history, rpo
from replication.topics.links import resume_link
from replication.topics.mirrors import create_mirror
from tests.e2e.conftest import screenshot, screenshots

pytestmark = pytest.mark.e2e

BACKLOG = 100_000
ACTOR = audit.Actor.system("tests")


def _table_lag(page) -> int:
    return sum(int(cell) for cell in page.locator("#partitions td.lag").all_inner_texts())


def test_a_backlog_shows_alike_on_the_chart_the_table_the_overview_and_metrics(
    login, live_server, celery_worker, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 50})
    for i in range(BACKLOG):
        producer.produce(topic_name, value=b"%d" % i, partition=i % 2)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    # The link is paused: no stream runs, and the lag is read from both clusters all the same.
    link = make_link({"cluster.link.paused": "true"})
    mirror = create_mirror(ACTOR, link, topic_name)

    page = login("viewer")
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    expect(page.locator("#partitions td.lag").first).to_have_text("50000")
    assert _table_lag(page) == BACKLOG
    lag_now = page.locator('figure[data-chart="Lag"] .chart-latest')
    expect(lag_now).to_have_text("100,000")
    # The beat samples every 10 s, the stream running or not: the chart draws the backlog.
    sampled = wait_for(lambda: history.mirror_series(mirror)["lag"], 40)
    assert sampled and sampled[-1].value == BACKLOG
    expect(page.locator('figure[data-chart="Lag"] polyline')).not_to_have_count(0)
    expect(page.locator('figure[data-chart="Lag"] figcaption')).to_contain_text(
        "peak 100,000 · last 15 minutes"
    )
    assert page.locator('figure[data-chart="Lag"] text').count() >= 5  # values and times
    screenshot(page, "mirror-backlog")

    # The overview and /metrics read the same readings.
    page.goto(f"{live_server.url}/")
    expect(page.locator("#stat-lag")).to_have_text("50000")
    metrics = page.request.get(f"{live_server.url}/metrics").text()
    ids = f'link="{link.name}",destination="destination",mirror="{topic_name}"'
    for partition in (0, 1):
        assert f'isthmus_mirror_partition_lag{{{ids},partition="{partition}"}} 50000' in metrics

    # An RPO target of 1 s: the beat's next sample finds the paused mirror's oldest record
    # older, and the overview names it among the mirrors in trouble.
    rpo.set_target(ACTOR, link, 1)
    breached = ClusterLink.objects.filter(pk=link.pk, rpo_breached_at__isnull=False).exists
    assert wait_for(breached, 40), "the sample saw no breach of the RPO target"
    page.goto(f"{live_server.url}/")
    trouble = page.locator(f'#troubled-mirrors tr[data-mirror="{topic_name}"]')
    expect(trouble).to_contain_text("over the link's RPO target of 1 s")
    expect(page.locator("[data-rpo-breached]")).to_be_visible()
    metrics = page.request.get(f"{live_server.url}/metrics").text()
    assert f'isthmus_link_rpo_target_seconds{{link="{link.name}",destination="destination"}} 1' in (
        metrics
    )
    screenshots(page, "overview-rpo-breached")

    # Copying, the table and the chart's "now" agree at each refresh (they come together)
    # until both say 0; the chart keeps the peak.
    resume_link(ACTOR, link)
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    expect(lag_now).to_have_text("0", timeout=120_000)
    assert _table_lag(page) == 0
    expect(page.locator('figure[data-chart="Lag"] figcaption')).to_contain_text("peak 100,000")
    page.goto(f"{live_server.url}/")
    expect(trouble).to_have_count(0)  # caught up: within its target again
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")

    # Another range: the last hour, with quarter-hour clock times.
    page.get_by_role("link", name="last hour").click()
    caption = page.locator('figure[data-chart="Lag"] figcaption')
    expect(caption).to_contain_text("last hour")
    labels = page.locator('figure[data-chart="Lag"] text').all_text_contents()
    assert any(re.fullmatch(r"\d\d:(00|15|30|45)", label) for label in labels), labels
