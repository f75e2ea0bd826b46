"""Failing back from the console: an operator asks for a truncate-and-restore on the
failed-over mirror's page, seeing per partition what would be set aside and what copied; an
approver approves; the old primary ends a mirror of the promoted topic, record by record,
with the records it took after the failover in its quarantine topic."""

import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from replication.cutover import promote
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.e2e.conftest import approve_as_approver, screenshot
from tests.kafka_clients import produce
from tests.mirror_checks import eventually, read_all

pytestmark = pytest.mark.e2e

ACTOR = audit.Actor.system("tests")


def _records(first: int, count: int) -> list[dict]:
    return [
        {"key": str(i).encode(), "value": f"value {i}".encode(), "partition": i % 2}
        for i in range(first, first + count)
    ]


def test_an_operator_fails_back_once_approved_and_the_old_primary_mirrors_the_promoted_topic(
    browser, login, live_server, celery_worker, bidirectional, make_topic, topic_name
):
    plain = {n: {"bootstrap.servers": n.bootstrap} for n in (kafka.SOURCE, kafka.DESTINATION)}
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    produce(plain[kafka.SOURCE], topic_name, _records(0, 10))
    link = bidirectional(**{"metadata.max.age.ms": "5000"})
    create_mirror(ACTOR, link, topic_name)
    eventually(
        lambda: len(read_all(kafka.DESTINATION.bootstrap, topic_name)) == 10, 120, "the copy"
    )
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    produce(plain[kafka.SOURCE], topic_name, _records(100, 4))  # the old primary's, diverging
    produce(plain[kafka.DESTINATION], topic_name, _records(200, 6))  # the new primary's

    page = login("operator")
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    page.locator("#fail-back").click()
    expect(page.locator("#plan-ok")).to_contain_text("once approved")
    for p in (0, 1):  # 5 shared, 2 set aside and 3 to copy in each partition
        row = page.locator(f'#plan-truncation tr[data-partition="{p}"]')
        expect(row.locator("td")).to_have_text([str(p), "5", "2", "3"])
    page.fill("#id_reason", "the old primary is back")
    page.fill("#id_confirm_name", topic_name)
    page.get_by_role("button", name="Ask for approval").click()
    page.wait_for_url(re.compile(r"/approvals/\d+/$"))
    expect(page.locator("#approve")).to_have_count(0)  # never one's own

    approve_as_approver(browser, live_server.url, "the old primary is back")

    expect(page.locator("h1 .badge")).to_have_text("EXECUTED", timeout=90_000)
    page.goto(f"{live_server.url}/mirrors/source/{topic_name}/")
    expect(page.locator("h1 .badge")).to_have_text("ACTIVE")
    report = page.locator("#restore-report")
    expect(report).to_contain_text("truncated to 0:5 1:5")
    expect(report).to_contain_text("records to copy from the promoted topic: 0:3 1:3")
    screenshot(page, "fail-back")

    # Record by record: the old primary holds the promoted topic, at the same offsets; its own
    # four are in the quarantine, saying where they were.
    eventually(
        lambda: (
            read_all(kafka.SOURCE.bootstrap, topic_name)
            == read_all(kafka.DESTINATION.bootstrap, topic_name)
        ),
        120,
        "the old primary equal to the promoted topic",
    )
    assert len(read_all(kafka.SOURCE.bootstrap, topic_name)) == 16
    restored = MirrorTopic.objects.get(link__destination__name="source", mirror_topic=topic_name)
    quarantine = restored.stop_report["quarantine"]
    held = read_all(kafka.SOURCE.bootstrap, quarantine)
    assert sorted(r.key for r in held) == [b"100", b"101", b"102", b"103"]
    assert {dict(r.headers)["isthmus.origin.offset"] for r in held} == {b"5", b"6"}
    leftovers.delete_topics(kafka.SOURCE, [quarantine])
