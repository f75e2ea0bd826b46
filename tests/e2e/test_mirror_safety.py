"""What is happening and what is safe, said on the page: a mirror not fetched yet says why and
for about how long; a caught-up mirror offers Promote as its primary action and marks Failover
as the disaster action; a mirror whose source topic is deleted counts as in
trouble on the overview, saying when it fails."""

import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.governance import audit
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import produce

pytestmark = pytest.mark.e2e


def test_promote_leads_once_caught_up_and_a_deleted_source_is_trouble_with_its_deadline(
    login, live_server, celery_worker, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, topic_name, [{"value": b"v"}] * 3)
    link = make_link({"metadata.max.age.ms": "5000", "cluster.link.retry.timeout.ms": "600000"})
    create_mirror(audit.Actor.system("tests"), link, topic_name)

    page = login("operator")
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    # Until the stream first fetches it, the mirror says why it is not copying yet and how long.
    if page.locator('#partitions tr[data-partition="0"] td.fetched-end').inner_text() == "–":
        expect(page.locator("#starting")).to_contain_text(re.compile(r"within|about \d+ s"))
    expect(page.locator("#safe-to-promote")).to_have_text(
        "Caught up with its source: safe to promote.", timeout=120_000
    )
    page.reload()
    expect(page.locator("#promote")).to_have_attribute("class", "button")  # primary, not secondary
    expect(page.locator("#failover")).to_have_attribute("title", re.compile("disaster action"))
    expect(page.locator("#failover")).to_have_class(re.compile("danger"))

    KafkaAdmin(admin_config(kafka.SOURCE)).delete_topic(topic_name)
    page.goto(f"{live_server.url}/")
    expect(page.locator("#stat-troubled")).to_have_text("1", timeout=60_000)  # refreshes itself
    trouble = page.locator(f'#troubled-mirrors [data-mirror="{topic_name}"]')
    expect(trouble).to_contain_text(re.compile(r"has been missing since .* the mirror fails at"))
