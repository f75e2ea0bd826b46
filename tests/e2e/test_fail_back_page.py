"""Failing back from the console: an operator asks for a truncate-and-restore on the
failed-over mirror's page, seeing per partition what would be set aside and what copied; an
approver approves; the old primary ends a mirror of the promoted topic, record by record,
with the records it took after the failover in its quarantine topic. The same after a reverse
and then a failover, asked from the newer primary's page (the old primary's offers none and
says why)."""

import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from replication.cutover import promote, reverse
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.e2e.conftest import approve_as_approver, screenshot, screenshots
from tests.kafka_clients import produce
from tests.mirror_checks import eventually, read_all

pytestmark = pytest.mark.e2e

ACTOR = audit.Actor.system("tests")
PLAIN = {n: {"bootstrap.servers": n.bootstrap} for n in (kafka.SOURCE, kafka.DESTINATION)}


def _records(first: int, count: int, partitions: int = 2) -> list[dict]:
    return [
        {"key": str(i).encode(), "value": f"value {i}".encode(), "partition": i % partitions}
        for i in range(first, first + count)
    ]


def _count(node: kafka.KafkaNode, topic: str, expected: int, what: str) -> None:
    eventually(lambda: len(read_all(node.bootstrap, topic)) == expected, 60, what)


def test_an_operator_fails_back_once_approved_and_the_old_primary_mirrors_the_promoted_topic(
    browser, login, live_server, celery_worker, bidirectional, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    produce(PLAIN[kafka.SOURCE], topic_name, _records(0, 10))
    link = bidirectional(**{"metadata.max.age.ms": "5000"})
    create_mirror(ACTOR, link, topic_name)
    eventually(
        lambda: len(read_all(kafka.DESTINATION.bootstrap, topic_name)) == 10, 120, "the copy"
    )
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    produce(PLAIN[kafka.SOURCE], topic_name, _records(100, 4))  # the old primary's, diverging
    produce(PLAIN[kafka.DESTINATION], topic_name, _records(200, 6))  # the new primary's

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
    held = failed_back(kafka.SOURCE, kafka.DESTINATION, topic_name, 16)
    assert sorted(r.key for r in held) == [b"100", b"101", b"102", b"103"]
    assert {dict(r.headers)["isthmus.origin.offset"] for r in held} == {b"5", b"6"}


def test_fail_back_after_a_reverse_and_a_failover_runs_from_the_newer_primarys_page(
    browser, login, live_server, celery_worker, bidirectional, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    produce(PLAIN[kafka.SOURCE], topic_name, _records(0, 5, 1))
    link = bidirectional(**{"metadata.max.age.ms": "5000"})
    create_mirror(ACTOR, link, topic_name)
    _count(kafka.DESTINATION, topic_name, 5, "the copy")
    (done,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)
    assert done.error == "", done.error
    produce(PLAIN[kafka.DESTINATION], topic_name, _records(5, 3, 1))  # the primary's, copied back
    _count(kafka.SOURCE, topic_name, 8, "the copy back")
    # The destination is lost: its mirror on the source is failed over, and each side writes.
    promote.stop_mirrors(ACTOR, peer_of(link), [topic_name], promote.FAILOVER, wait=True)
    produce(PLAIN[kafka.DESTINATION], topic_name, _records(100, 2, 1))
    produce(PLAIN[kafka.SOURCE], topic_name, _records(200, 4, 1))

    page = login("operator")
    page.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    expect(page.locator("#fail-back")).to_have_count(0)
    expect(page.locator('#not-offered li[data-action="truncate-and-restore"]')).to_contain_text(
        "it is the newer primary"
    )
    page.goto(f"{live_server.url}/mirrors/source/{topic_name}/")
    page.locator("#fail-back").click()
    expect(page.locator("#plan-ok")).to_contain_text("once approved")
    row = page.locator('#plan-truncation tr[data-partition="0"]')
    expect(row.locator("td")).to_have_text(["0", "8", "2", "4"])
    page.fill("#id_reason", "the destination is back")
    page.fill("#id_confirm_name", topic_name)
    page.get_by_role("button", name="Ask for approval").click()
    page.wait_for_url(re.compile(r"/approvals/\d+/$"))
    approve_as_approver(browser, live_server.url, "the destination is back")

    expect(page.locator("h1 .badge")).to_have_text("EXECUTED", timeout=60_000)
    page.goto(f"{live_server.url}/mirrors/source/{topic_name}/")
    expect(page.locator("#primary")).to_contain_text(f"{topic_name} on destination")
    expect(page.locator("#fail-back")).to_have_count(0)
    screenshots(page, "fail-back-after-reverse")
    held = failed_back(kafka.DESTINATION, kafka.SOURCE, topic_name, 12)
    assert sorted(r.key for r in held) == [b"100", b"101"]


def failed_back(old: kafka.KafkaNode, new: kafka.KafkaNode, topic: str, records: int) -> list:
    """Once the old primary `old` holds `records`, exactly the new primary's at the same offsets:
    the records its restore set aside (their quarantine topic deleted)."""
    eventually(
        lambda: read_all(old.bootstrap, topic) == read_all(new.bootstrap, topic),
        120,
        "the old primary equal to the promoted topic",
    )
    assert len(read_all(old.bootstrap, topic)) == records
    restored = MirrorTopic.objects.get(link__destination__name=old.name, mirror_topic=topic)
    quarantine = restored.stop_report["quarantine"]
    held = read_all(old.bootstrap, quarantine)
    leftovers.delete_topics(old, [quarantine])
    return held
