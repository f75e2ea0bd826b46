"""Single sign-on in Chromium against a real OpenID Connect provider: a provider group, in the
claim and for the scope configured, maps to the approver role, whose holder approves a request;
a user whose groups map to no role is refused, saying why; local accounts still sign in beside
it."""

import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from replication.actions import approvals
from replication.governance import audit
from replication.governance.users import role_of
from replication.models import AuditEvent, ExternalIdentity
from replication.topics.mirrors import create_mirror

pytestmark = pytest.mark.e2e


@pytest.fixture
def sign_on(settings, identity_provider):
    settings.OIDC_ISSUER = identity_provider
    settings.OIDC_CLIENT_ID = "isthmus"
    settings.OIDC_CLIENT_SECRET = "isthmus-secret"  # noqa: S105 (the test provider's)
    settings.OIDC_NAME = "Test IdP"
    settings.OIDC_ROLES = {"kafka-approvers": "approver", "kafka-operators": "operator"}
    # The provider sends groups for the `groups` scope only, here as Keycloak nests them: both
    # settings must reach it for anyone to be given a role.
    settings.OIDC_SCOPES = ["openid", "profile", "email", "groups"]
    settings.OIDC_GROUPS_CLAIM = "realm_access.roles"


def _through_the_provider(page, url: str, name: str) -> None:
    page.goto(f"{url}/login/")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.fill("#id_username", name)
    page.fill("#id_password", f"{name}-at-the-provider-1")
    page.get_by_role("button", name="Sign in at the provider").click()


def test_a_provider_group_gives_the_approver_role_whose_holder_approves_a_request(
    browser, page, live_server, sign_on, celery_worker, users, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.paused": "true"})
    create_mirror(audit.Actor.system("tests"), link, topic_name)
    operator = audit.Actor(user=users["operator"], name="operator")
    asked = approvals.submit(operator, link, "failover", [topic_name], "the region is lost")

    _through_the_provider(page, live_server.url, "alice")
    page.wait_for_url(f"{live_server.url}/")
    expect(page.locator(".whoami")).to_contain_text("alice")
    identity = ExternalIdentity.objects.select_related("user").get()
    assert identity.groups == ["kafka-approvers"] and role_of(identity.user) == "approver"
    assert not identity.user.has_usable_password()  # the provider's only
    login = AuditEvent.objects.filter(action="account.login", actor_name="alice").get()
    assert login.message == "single sign-on through Test IdP"
    # No password here: the account page says so, and makes the CLI's tokens as for anyone.
    page.goto(f"{live_server.url}/account/")
    expect(page.locator("#signed-on")).to_contain_text("kafka-approvers")
    expect(page.locator("#change-password")).to_have_count(0)

    page.goto(f"{live_server.url}/approvals/{asked.request.pk}/")
    page.locator("#approve").click()
    expect(page.locator("h1 .badge")).to_have_text("EXECUTED", timeout=60_000)
    assert link.mirrors.get().state == "STOPPED"


def test_a_user_whose_provider_groups_give_no_role_is_refused_saying_why(
    browser, page, live_server, sign_on, login
):
    _through_the_provider(page, live_server.url, "bob")
    page.wait_for_url(re.compile(r"/login/"))
    expect(page.get_by_role("alert").or_(page.get_by_role("status"))).to_contain_text(
        "None of your groups at Test IdP (marketing) gives an Isthmus role"
    )
    assert not ExternalIdentity.objects.exists()
    refused = AuditEvent.objects.get(action="account.login", result="refused")
    assert refused.actor_name == "bob (single sign-on)"
    # Local accounts stay, for break-glass.
    login("admin")
