"""The mirror page's consumer groups in Chromium, on the real brokers: the section loads on its
own once the page is up (HTMX) and shows a group on each cluster with its lag there, at a
desktop's width and a phone's (kept as the docs' screenshots)."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.governance import audit
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import produce

pytestmark = pytest.mark.e2e


def test_the_groups_reading_a_mirror_on_each_cluster_show_with_their_lag(
    login, live_server, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, topic_name, [{"value": b"v"}] * 5)
    mirror = create_mirror(
        audit.Actor.system("tests"), make_link({"cluster.link.paused": "true"}), topic_name
    )
    group = f"{topic_name}-billing"
    source = KafkaAdmin(admin_config(kafka.SOURCE))
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    source.alter_group_offsets({group: {(topic_name, 0): 2}})
    destination.alter_group_offsets({group: {(mirror.mirror_topic, 0): 0}})
    try:
        page = login("viewer")
        for width, name in ((1280, "mirror-groups"), (390, "mirror-groups-phone")):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{live_server.url}/mirrors/destination/{mirror.mirror_topic}/")
            row = page.locator(f'#consumer-group-table tr[data-group="{group}"]')
            expect(row.locator("td.lag").first).to_contain_text("3", timeout=15_000)
            expect(row.locator("td.lag").nth(1)).to_contain_text("0")
            expect(row.locator("td.sync")).to_contain_text("off")
            # The section alone: the docs show it (var/screenshots/<name>.png).
            shots = settings.VAR_DIR / "screenshots"
            shots.mkdir(parents=True, exist_ok=True)
            page.locator("#consumer-groups").screenshot(path=str(shots / f"{name}.png"))
    finally:
        source.delete_groups([group])
        destination.delete_groups([group])
