"""The approver sees what they approve: a forced link deletion's request lists, as things are
now, the mirror topics it would fail over and their lag, beside what was so when it was asked;
a truncate-and-restore is decided from its plan alone (per partition what is set aside and what
copied across, now and when asked); the approvals list names what it concerns; the requester is
told in the console once it ran."""

import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from infra.processes import wait_for
from replication.actions import approvals
from replication.cutover import promote
from replication.governance import audit
from replication.models import ApprovalRequest, ClusterLink, Notification
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from tests.e2e.conftest import approve_as_approver, screenshot, screenshots, signed_in
from tests.kafka_clients import produce
from tests.mirror_checks import eventually, read_all

pytestmark = pytest.mark.e2e

ACTOR = audit.Actor.system("tests")


def test_an_approver_sees_the_mirrors_a_forced_deletion_fails_over_now_and_the_requester_is_told(
    browser, login, live_server, celery_worker, make_link, make_topic, topic_name
):
    link = make_link({"cluster.link.paused": "true"})
    first = make_topic(kafka.SOURCE, f"{topic_name}-a")
    create_mirror(ACTOR, link, first)
    ClusterLink.objects.filter(pk=link.pk).update(approvals_required=1)

    page = login("operator")
    page.goto(f"{live_server.url}/links/destination/{link.name}/delete/")
    page.fill("#id_reason", "the old datacenter closes")
    page.check("#id_force")
    page.fill("#id_confirm_name", link.name)
    page.get_by_role("button", name=re.compile("Ask for approval")).click()
    page.wait_for_url(re.compile(r"/approvals/\d+/$"))
    request_url = page.url
    # When asked, one mirror topic would have been failed over.
    expect(page.locator("#plan-asked tr[data-topic]")).to_have_count(1)

    # Meanwhile a second mirror is made, and records arrive the link has not copied.
    second = make_topic(kafka.SOURCE, f"{topic_name}-b")
    create_mirror(ACTOR, link, second)
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, second, [{"value": b"x"}] * 3)

    context, approver = signed_in(browser, live_server.url, "approver")
    approver.goto(f"{live_server.url}/approvals/")
    listed = approver.locator("tr[data-request] td.topics")
    expect(listed).to_have_text("the link and its 1 mirror topic, failed over first")
    approver.goto(request_url)
    now = approver.locator("#plan-now")
    expect(now.locator("tr[data-topic]")).to_have_count(2)
    expect(now.locator(f'tr[data-topic="{second}"]')).to_contain_text("0:3")
    expect(approver.locator("#plan-asked tr[data-topic]")).to_have_count(1)
    expect(approver.get_by_text("fails these mirror topics over first")).to_be_visible()
    screenshot(approver, "approval-dry-run-now")
    approver.locator("#approve").click()
    context.close()

    # The requester is told, in the console, once it ran.
    assert wait_for(lambda: Notification.objects.filter(event="request.executed").exists(), 60)
    page.goto(f"{live_server.url}/links/")
    expect(page.locator("#unread-notifications")).to_have_text("2")
    page.locator("#notifications-link").click()
    items = page.locator("#notification-list li")
    expect(items.first).to_contain_text(
        f"to delete link {link.name}, failing its mirror topics over first ran"
    )
    expect(items.nth(1)).to_contain_text("was approved by approver; it runs now")
    expect(page.locator("#unread-notifications")).to_have_count(0)


def test_an_approver_decides_a_truncate_and_restore_from_its_per_partition_plan(
    browser, live_server, celery_worker, users, bidirectional, make_topic, topic_name
):
    plain = {n: {"bootstrap.servers": n.bootstrap} for n in (kafka.SOURCE, kafka.DESTINATION)}
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    records = [{"value": b"shared", "partition": i % 2} for i in range(4)]
    produce(plain[kafka.SOURCE], topic_name, records)
    link = bidirectional(**{"metadata.max.age.ms": "5000"})
    create_mirror(ACTOR, link, topic_name)
    eventually(lambda: len(read_all(kafka.DESTINATION.bootstrap, topic_name)) == 4, 120, "copy")
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    # One record in each partition of the old primary after the failover; two in the new one's.
    produce(plain[kafka.SOURCE], topic_name, [{"value": b"old", "partition": p} for p in (0, 1)])
    produce(
        plain[kafka.DESTINATION],
        topic_name,
        [{"value": b"new", "partition": i % 2} for i in range(4)],
    )
    operator = audit.Actor(user=users["operator"], name="operator")
    approvals.submit(
        operator,
        peer_of(link),
        ApprovalRequest.Action.TRUNCATE_AND_RESTORE,
        [topic_name],
        "the old primary is back",
    )

    context, approver = signed_in(browser, live_server.url, "approver")
    approver.goto(f"{live_server.url}/approvals/")
    expect(approver.locator("tr[data-request] td.direction")).to_have_text("destination → source")
    approver.locator("tr[data-request] a").first.click()
    expect(approver.locator("#now-summary")).to_contain_text(f"Fail back {topic_name} on source")
    for table in ("#plan-now-partitions-1", "#plan-asked-partitions-1"):  # now, and when asked
        for p in (0, 1):  # truncated to 2, 1 set aside, 2 copied across
            row = approver.locator(f'{table} tr[data-partition="{p}"] td')
            expect(row).to_have_text([str(p), "2", "1", "2"])
    expect(approver.locator("#now-producers")).to_contain_text(f"{topic_name}")
    expect(approver.locator("#now-objects a[data-kind=mirror]")).to_have_attribute(
        "href", f"/mirrors/destination/{topic_name}/"
    )
    screenshots(approver, "approval-truncate-and-restore")
    approver.locator("#approve").click()
    expect(approver.locator("h1 .badge")).to_have_text("EXECUTED", timeout=90_000)
    context.close()


def test_an_operator_fails_over_a_links_50_mirrors_in_one_approved_action(
    browser, login, live_server, celery_worker, make_link, topic_name
):
    from confluent_kafka.admin import NewTopic

    from infra.admin_client import AdminClient

    names = [f"{topic_name}-{i:02d}" for i in range(50)]
    source = AdminClient({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for future in source.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(30)
    link = make_link({"cluster.link.paused": "true"})
    for name in names:
        create_mirror(ACTOR, link, name)

    page = login("operator")
    page.goto(f"{live_server.url}/links/destination/{link.name}/")
    # Two ticked, paused at once in place.
    for name in names[:2]:
        page.get_by_label(f"Choose {name}").check()
    page.locator("#bulk").get_by_role("button", name="Pause").click()
    expect(page.get_by_role("status")).to_contain_text(f"Paused 2 mirror topics: {names[0]}")
    expect(page.locator(f'tr[data-mirror="{names[0]}"]')).to_contain_text("PAUSED")

    # All 50 by a pattern, failed over in one request.
    page.fill("#bulk-pattern", f"{topic_name}-.*")
    page.locator("#bulk").get_by_role("button", name="Fail over…").click()
    expect(page.locator("#plan-topics tr[data-topic]")).to_have_count(50)
    expect(page.locator("#plan-ok")).to_contain_text("All 50 can go ahead, once approved")
    page.fill("#id_reason", "the source region is lost")
    page.fill("#id_confirm_name", link.name)
    page.get_by_role("button", name="Ask for approval").click()
    page.wait_for_url(re.compile(r"/approvals/\d+/$"))
    expect(page.locator("#plan-asked tr[data-topic]")).to_have_count(50)

    approve_as_approver(browser, live_server.url, "the source region is lost")

    expect(page.locator("h1 .badge")).to_have_text("EXECUTED", timeout=60_000)
    rows = page.locator("#topics tr[data-topic]")
    expect(rows).to_have_count(50)
    expect(page.locator("#topics td .badge", has_text="STOPPED")).to_have_count(50)
    screenshot(page, "bulk-failover-done")
    assert set(link.mirrors.values_list("state", flat=True)) == {"STOPPED"}


def test_the_approvals_filter_applies_as_soon_as_a_state_is_chosen(login, live_server):
    """The select submits its form on change from the console's script, not an inline handler
    (which the Content-Security-Policy refuses)."""
    page = login("viewer")
    page.goto(f"{live_server.url}/approvals/")
    options = page.locator("select[name=state] option").all_inner_texts()
    page.select_option("select[name=state]", options[-1])
    page.wait_for_url(re.compile(rf"/approvals/\?state={options[-1]}$"))
