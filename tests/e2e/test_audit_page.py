import re

import pytest
from playwright.sync_api import expect

from replication.governance import audit
from replication.models import AuditEvent

pytestmark = pytest.mark.e2e


def test_it_lets_an_operator_filter_the_audit_trail_to_refused_events(login, live_server):
    tests = audit.Actor.system("tests")
    audit.record(tests, "link.create", "link east")
    audit.record(
        tests,
        "mirror.create",
        "mirror orders",
        result=AuditEvent.Result.REFUSED,
        message="Topic orders does not exist on the source.",
    )
    audit.record(tests, "mirror.grow", "mirror payments", result=AuditEvent.Result.FAILED)

    page = login("operator")
    page.get_by_role("link", name="Audit").click()
    page.wait_for_url(f"{live_server.url}/audit/")
    expect(page.get_by_role("link", name="Audit")).to_have_attribute("aria-current", "page")
    rows = page.locator("#audit-events tbody tr")
    expect(rows).to_have_count(4)  # the three, and the operator's own sign-in
    expect(rows.first).to_contain_text("account.login")

    page.select_option("#id_result", "refused")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"/audit/\?.*result=refused"))
    expect(rows).to_have_count(1)
    expect(rows.locator("td.target")).to_have_text("mirror orders")
    expect(rows.locator("[data-result]")).to_have_text("refused")
    expect(rows).to_contain_text("Topic orders does not exist on the source.")
    expect(page.get_by_role("link", name="Export CSV")).to_have_attribute(
        "href", re.compile(r"^/audit/export\.csv\?.*result=refused")
    )


def test_an_approvals_trail_is_found_by_its_topic_and_break_glass_by_its_flag(
    browser, login, live_server, celery_worker, users, make_link, make_topic, topic_name
):
    from devstack import kafka
    from replication.actions import approvals
    from replication.topics.mirrors import create_mirror

    link = make_link({"cluster.link.paused": "true"})
    create_mirror(audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, topic_name))
    other = make_topic(kafka.SOURCE, f"{topic_name}-other")
    create_mirror(audit.Actor.system("tests"), link, other)
    operator = audit.Actor(user=users["operator"], name="operator")
    asked = approvals.submit(operator, link, "failover", [topic_name], "the region is lost")
    approvals.reject(audit.Actor(user=users["approver"], name="approver"), asked.request, "no")
    admin = audit.Actor(user=users["admin"], name="admin")
    approvals.submit(admin, link, "failover", [other], "dc1 burned down", break_glass=True)

    page = login("viewer")
    page.goto(f"{live_server.url}/audit/")
    page.fill("#id_topic", topic_name)
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#audit-events tbody tr")
    actions = rows.locator("td:nth-child(4) code")
    # Both topics' events (the name is found as a part): the request and its rejection too.
    expect(actions).to_have_text(
        [
            "mirror.stopped",
            "mirror.failover",
            "request.reject",
            "request.failover",
            "mirror.create",
            "mirror.create",
        ]
    )
    expect(rows.nth(3).locator("td.target")).to_have_text(f"mirror {topic_name}")
    expect(rows.nth(2)).to_contain_text(f"topics: {topic_name}")  # the rejection names it
    page.fill("#id_topic", other)  # the other alone
    page.get_by_role("button", name="Filter").click()
    expect(actions).to_have_text(["mirror.stopped", "mirror.failover", "mirror.create"])

    page.fill("#id_topic", "")
    page.check("#id_break_glass")
    page.get_by_role("button", name="Filter").click()
    expect(actions).to_have_text(["mirror.failover"])
    expect(rows.locator("[data-break-glass]")).to_have_text("break glass")
    expect(rows).to_contain_text("admin")
