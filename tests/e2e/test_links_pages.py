import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from tests.e2e.conftest import approve_as_approver, screenshot
from tests.kafka_clients import consume_all, produce

pytestmark = pytest.mark.e2e


def test_an_operator_links_and_mirrors_through_the_forms_watches_the_copy_and_promotes_once_approved(  # noqa: E501
    browser, login, live_server, celery_worker, make_link, make_topic, topic_name
):
    # make_link's teardown stops the stream of the link made through the pages and removes
    # its mirror topic.
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    source = {"bootstrap.servers": kafka.SOURCE.bootstrap}
    produce(source, topic_name, [{"value": v, "partition": 0} for v in (b"a", b"b", b"c")])

    page = login("operator")
    page.get_by_role("link", name="Links").click()
    page.get_by_role("link", name="Create link").click()
    page.fill("#id_name", "browser-link")
    page.select_option("#id_destination", label="destination")
    page.fill("#id_configs", "bootstrap.servers=localhost:9092\nno.such.key=1")
    page.get_by_role("button", name="Create link").click()
    expect(page.get_by_role("alert")).to_contain_text("Unknown link config 'no.such.key'")
    page.fill("#id_configs", "bootstrap.servers=localhost:9092\nmetadata.max.age.ms=5000")
    page.get_by_role("button", name="Create link").click()
    page.wait_for_url(re.compile(r"/links/destination/browser-link/$"))
    expect(page.locator("h1 .badge")).to_have_text("ACTIVE")
    expect(page.locator('tr[data-config="metadata.max.age.ms"]')).to_contain_text("5000")

    page.get_by_role("link", name="Create mirror topic").click()
    page.fill("#id_source_topic", topic_name)
    page.get_by_role("button", name="Create mirror").click()
    page.wait_for_url(re.compile(rf"/mirrors/destination/{topic_name}/$"))

    # The Celery worker starts the link's stream; the page shows the records arrive, no reload.
    row = {p: page.locator(f'tr[data-partition="{p}"]') for p in (0, 1)}
    mirror_end = {p: row[p].locator("td.mirror-end") for p in (0, 1)}
    expect(mirror_end[0]).to_have_text("3", timeout=120_000)
    expect(row[0].locator("td.lag")).to_have_text("0")
    produce(source, topic_name, [{"value": v, "partition": 1} for v in (b"d", b"e")])
    expect(mirror_end[1]).to_have_text("2", timeout=30_000)
    # The lag chart takes its samples while the stream runs (every 10 s) and refreshes itself.
    expect(page.locator('figure[data-chart="Lag"] .chart-latest')).to_have_text("0", timeout=40_000)
    screenshot(page, "mirror")

    # Paused, the mirror falls behind and the lag shows it; resumed, it catches up.
    page.get_by_role("button", name="Pause").click()  # at once, on the mirror's page
    expect(page.locator("h1 .badge")).to_have_text("PAUSED")
    expect(page.get_by_role("status")).to_contain_text(f"Paused mirror topic {topic_name}")
    # "pausing" until the link's stream has let go of the mirror.
    expect(row[0].locator("td:nth-child(2)")).to_have_text("PAUSED", timeout=15_000)
    produce(source, topic_name, [{"value": b"f", "partition": 0}])
    expect(row[0].locator("td.lag")).to_have_text("1", timeout=15_000)
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("h1 .badge")).to_have_text("ACTIVE")
    expect(mirror_end[0]).to_have_text("4", timeout=60_000)
    expect(row[0].locator("td.lag")).to_have_text("0")

    # A promote needs the mirror's name typed, and then an approver other than the operator.
    page.locator("#promote").click()
    expect(page.locator("#plan-ok")).to_contain_text("once approved")
    page.fill("#id_reason", "moving the consumers to the destination")
    page.get_by_role("button", name="Ask for approval").click()
    expect(page.get_by_role("alert")).to_contain_text(f"Type {topic_name} to confirm")
    page.fill("#id_confirm_name", topic_name)
    page.get_by_role("button", name="Ask for approval").click()
    page.wait_for_url(re.compile(r"/approvals/\d+/$"))
    expect(page.locator("h1 .badge")).to_have_text("PENDING")
    expect(page.locator("#approve")).to_have_count(0)  # never one's own

    approve_as_approver(browser, live_server.url, "moving the consumers to the destination")

    # The operator's page follows the request to its end; the mirror stopped where it was.
    expect(page.locator("h1 .badge")).to_have_text("EXECUTED", timeout=60_000)
    expect(page.locator(f'#topics tr[data-topic="{topic_name}"]')).to_contain_text("STOPPED")
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    expect(page.locator("h1 .badge")).to_have_text("STOPPED")
    expect(page.locator("#stop-offsets")).to_have_text(re.compile(r"^\s*0:4\s+1:2\s*$"))

    # Kafka's own consumer sees each record at the source's partition and offset.
    copied = consume_all(kafka.DESTINATION.bootstrap, topic_name, 6)
    assert sorted((m.partition(), m.offset(), m.value()) for m in copied) == [
        (0, 0, b"a"),
        (0, 1, b"b"),
        (0, 2, b"c"),
        (0, 3, b"f"),
        (1, 0, b"d"),
        (1, 1, b"e"),
    ]
