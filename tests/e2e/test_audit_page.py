import re

import pytest
from playwright.sync_api import expect

from replication import audit
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
