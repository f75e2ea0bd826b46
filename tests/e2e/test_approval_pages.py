import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from replication import audit
from replication.mirrors import create_mirror

pytestmark = pytest.mark.e2e


def test_an_operator_asks_to_promote_an_approver_approves_and_the_operator_sees_stopped(
    browser, login, live_server, celery_worker, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)  # empty: caught up without copying anything
    link = make_link({"cluster.link.paused": "true"})
    create_mirror(audit.Actor.system("tests"), link, topic_name)

    operator = login("operator")
    operator.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    operator.get_by_role("link", name="Promote").click()
    expect(operator.locator("#plan-ok")).to_contain_text("once approved")
    operator.fill("#id_reason", "moving the consumers to the destination")
    operator.get_by_role("button", name="Ask for approval").click()
    operator.wait_for_url(re.compile(r"/approvals/\d+/$"))
    expect(operator.locator("h1 .badge")).to_have_text("PENDING")
    expect(operator.locator("#approve")).to_have_count(0)  # never one's own

    # The approver, in a browser of their own, sees the request waiting and approves it.
    context = browser.new_context()
    approver = context.new_page()
    approver.set_default_timeout(15_000)
    approver.goto(f"{live_server.url}/login/")
    approver.fill("#id_username", "approver")
    approver.fill("#id_password", "approver-password-1")
    approver.click("button[type=submit]")
    expect(approver.locator("#pending-approvals")).to_have_text("1")
    approver.get_by_role("link", name=re.compile("Approvals")).click()
    approver.locator("tr[data-request] a").first.click()
    expect(approver.get_by_text("moving the consumers to the destination")).to_be_visible()
    approver.locator("#approve").click()
    context.close()

    # The operator's page follows the request live, to its end.
    expect(operator.locator("h1 .badge")).to_have_text("EXECUTED", timeout=60_000)
    expect(operator.locator(f'tr[data-topic="{topic_name}"]')).to_contain_text("STOPPED")
    operator.goto(f"{live_server.url}/mirrors/destination/{topic_name}/")
    expect(operator.locator("h1 .badge")).to_have_text("STOPPED")
    expect(operator.locator("#stop-offsets")).to_contain_text("0:0")
