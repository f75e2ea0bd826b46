import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from tests.e2e.conftest import screenshot
from tests.kafka_clients import produce

pytestmark = pytest.mark.e2e


def test_an_operator_links_mirrors_watches_lag_live_and_pauses(
    login, live_server, make_link, make_topic, topic_name
):
    # make_link's teardown removes the mirror topic this test creates through the pages.
    make_topic(kafka.SOURCE, topic_name, partitions=2)
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
    lag = page.locator('tr[data-partition="0"] td.lag')
    expect(lag).to_have_text("0")

    # The partition table refreshes itself: records produced now show up as lag, no reload.
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic_name,
        [{"value": b"first", "partition": 0}, {"value": b"second", "partition": 0}],
    )
    expect(lag).to_have_text("2", timeout=10_000)
    screenshot(page, "mirror")

    page.get_by_role("link", name="Pause").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Pause mirror topic")
    page.get_by_role("button", name="Yes, go ahead").click()
    expect(page.locator("h1 .badge")).to_have_text("PAUSED")
    expect(page.get_by_role("status")).to_contain_text(f"Paused mirror topic {topic_name}")
