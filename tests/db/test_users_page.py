"""The users pages: admins make users, set their role, disable and enable them and reset their
passwords; every change and every refusal is audited. Only the database is needed, not Kafka."""

import json
import threading
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from console.access import ROLES
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.governance import users as user_admin
from replication.governance.tokens import create_token
from replication.models import ApiToken, AuditEvent
from tests import audit_trail

pytestmark = pytest.mark.db

LAST_ADMIN = "There must stay at least one active admin"


@pytest.fixture
def admin(client_as):
    return client_as("admin")


def detail(username):
    return reverse("user-detail", args=[username])


def post(client, name, username, data=None):
    return client.post(reverse(name, args=[username]), data or {})


def create(client, username, role="operator", email=""):
    return client.post(reverse("user-create"), {"username": username, "role": role, "email": email})


def only_event(action):
    """The one audit event of `action`: fails if there is none, or more than one."""
    (event,) = AuditEvent.objects.filter(action=action)
    return event


def shown(username, role, active=True):
    return {"username": username, "role": role, "active": active}


def new_password(page) -> str:
    html = page.content.decode()
    start = html.index('<pre id="new-password">') + len('<pre id="new-password">')
    return html[start : html.index("</pre>", start)]


def fresh(username):
    return get_user_model().objects.get(username=username)


def api_status(secret: str) -> int:
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/kafka/v3/clusters").status_code


# Who may. -----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [r for r in ROLES if r != "admin"])
def test_only_admins_reach_the_pages_and_each_refused_post_is_audited(client_as, users, role):
    client = client_as(role)
    assert client.get(reverse("users")).status_code == 403
    assert client.get(detail("viewer")).status_code == 403
    assert "Users</a>" not in client.get(reverse("approvals")).content.decode()
    posts = [
        (reverse("user-create"), {"username": "sneaky", "role": "admin"}),
        (reverse("user-role", args=[role]), {"role": "admin"}),
        (reverse("user-disable", args=["admin"]), {}),
        (reverse("user-enable", args=["admin"]), {}),
        (reverse("user-password", args=["admin"]), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url

    refused = AuditEvent.objects.order_by("id")
    assert [(e.action, e.target, e.actor_name, e.result) for e in refused] == [
        ("user.manage", url, role, "refused") for url, _ in posts
    ]
    assert not get_user_model().objects.filter(username="sneaky").exists()
    assert user_admin.role_of(fresh(role)) == role
    assert fresh("admin").is_active


def test_an_admin_sees_every_user_with_role_state_and_live_tokens(admin, users):
    create_token(audit.Actor.system("tests"), users["viewer"], "laptop")
    page = admin.get(reverse("users"))
    html = page.content.decode()
    assert 'href="/users/" aria-current="page">Users</a>' in html
    assert [r.user.username for r in page.context["rows"]] == sorted(ROLES)
    rows = {r.user.username: (r.role, r.active, r.tokens) for r in page.context["rows"]}
    assert rows == {role: (role, True, 1 if role == "viewer" else 0) for role in ROLES}
    assert admin.get(detail("viewer")).status_code == 200
    assert admin.get(detail("nobody")).status_code == 404


# Each change: one audit event. -------------------------------------------------------------


def test_creating_a_user_shows_a_working_one_time_password_once(admin, users):
    response = create(admin, "alice", "operator", "alice@example.com")
    assert response.status_code == 302 and response["Location"] == detail("alice")
    page = admin.get(detail("alice"))
    password = new_password(page)
    assert "will not be shown again" in page.content.decode()
    assert "Made user alice (operator)." in page.content.decode()
    assert password not in admin.get(detail("alice")).content.decode()  # once

    alice = fresh("alice")
    assert alice.is_active and alice.email == "alice@example.com"
    assert [g.name for g in alice.groups.all()] == ["operator"]
    assert Client().login(username="alice", password=password)

    event = only_event("user.create")
    assert (event.actor, event.actor_name, event.target, event.result) == (
        users["admin"],
        "admin",
        "user alice",
        "ok",
    )
    assert event.before is None and event.after == shown("alice", "operator")
    assert password not in json.dumps([event.before, event.after]) + event.message


def test_changing_a_role_replaces_the_group_and_is_audited(admin, users):
    response = post(admin, "user-role", "viewer", {"role": "approver"})
    assert response.status_code == 302
    assert "viewer is now approver." in admin.get(detail("viewer")).content.decode()
    assert [g.name for g in fresh("viewer").groups.all()] == ["approver"]
    event = only_event("user.role")
    assert (event.actor, event.target) == (users["admin"], "user viewer")
    assert (event.before, event.after) == (shown("viewer", "viewer"), shown("viewer", "approver"))

    post(admin, "user-role", "viewer", {"role": "approver"})  # no change, nothing to record
    assert AuditEvent.objects.filter(action="user.role").count() == 1


def test_demoting_a_superuser_takes_away_what_the_superuser_flag_gave(admin, users):
    root = get_user_model().objects.create_superuser("root", "", "root-password-1")
    assert user_admin.role_of(root) == "admin"
    post(admin, "user-role", "root", {"role": "viewer"})
    root = fresh("root")
    assert not root.is_superuser and user_admin.role_of(root) == "viewer"
    assert only_event("user.role").after == shown("root", "viewer")


def test_a_disabled_user_is_locked_out_of_the_api_and_the_console_until_enabled(admin, users):
    _, secret = create_token(audit.Actor.system("tests"), users["operator"], "ci")
    assert api_status(secret) == 200
    operator = Client()
    operator.force_login(users["operator"])
    assert operator.get(reverse("links")).status_code == 200

    assert post(admin, "user-disable", "operator").status_code == 302
    assert not fresh("operator").is_active
    event = only_event("user.disable")
    assert (event.actor, event.target) == (users["admin"], "user operator")
    assert (event.before, event.after) == (
        shown("operator", "operator"),
        shown("operator", "operator", active=False),
    )

    assert api_status(secret) == 401
    # Their open session is no longer theirs: pages and changes send them to log in.
    assert operator.get(reverse("links"))["Location"].startswith("/login/")
    refused = operator.post(reverse("link-create"), {"name": "x"})
    assert refused.status_code == 302 and refused["Location"].startswith("/login/")
    assert not Client().login(username="operator", password="operator-password-1")

    assert post(admin, "user-enable", "operator").status_code == 302
    event = only_event("user.enable")
    assert (event.actor, event.target) == (users["admin"], "user operator")
    assert (event.before, event.after) == (
        shown("operator", "operator", active=False),
        shown("operator", "operator"),
    )
    assert api_status(secret) == 200


def test_resetting_a_password_shows_the_new_one_once_and_ends_the_old(admin, users):
    viewer = Client()
    viewer.force_login(users["viewer"])
    response = post(admin, "user-password", "viewer")
    assert response.status_code == 302 and response["Location"] == detail("viewer")
    password = new_password(admin.get(detail("viewer")))
    assert password not in admin.get(detail("viewer")).content.decode()

    assert not Client().login(username="viewer", password="viewer-password-1")
    assert Client().login(username="viewer", password=password)
    assert viewer.get(reverse("links")).status_code == 302  # its session ended with the password

    event = only_event("user.password")
    assert (event.actor, event.target, event.result) == (users["admin"], "user viewer", "ok")
    assert event.before == event.after == shown("viewer", "viewer")
    assert password not in json.dumps([event.before, event.after]) + event.message


def test_an_admin_resetting_their_own_password_stays_signed_in(admin, users):
    post(admin, "user-password", "admin")
    password = new_password(admin.get(detail("admin")))
    page = admin.get(reverse("users"))
    assert page.status_code == 200 and "Users" in page.content.decode()  # not the login page
    assert not Client().login(username="admin", password="admin-password-1")
    assert Client().login(username="admin", password=password)


# Refusals: shown on the page, audited, nothing changed. -------------------------------------


def refusal(action) -> AuditEvent:
    event = only_event(action)
    assert event.result == "refused"
    return event


def test_an_admin_cannot_disable_or_demote_themselves(admin, users):
    page = post(admin, "user-disable", "admin")
    assert page.status_code == 200
    assert "You cannot disable yourself" in page.content.decode()
    assert refusal("user.disable").target == "user admin"

    page = post(admin, "user-role", "admin", {"role": "operator"})
    assert page.status_code == 200
    assert "You cannot take the admin role from yourself" in page.content.decode()
    assert refusal("user.role").actor == users["admin"]
    admin_user = fresh("admin")
    assert admin_user.is_active and user_admin.role_of(admin_user) == "admin"


def test_the_last_active_admin_is_never_disabled_or_demoted(admin, users):
    system = audit.Actor.system("tests")
    with pytest.raises(ReplicationError, match=LAST_ADMIN) as refused:
        user_admin.disable(system, users["admin"])
    assert refused.value.status == 409
    with pytest.raises(ReplicationError, match=LAST_ADMIN):
        user_admin.set_role(system, users["admin"], "viewer")
    assert refusal("user.disable").message.startswith(LAST_ADMIN)
    assert refusal("user.role").message.startswith(LAST_ADMIN)

    # With a second admin, either may go, but not both.
    post(admin, "user-role", "approver", {"role": "admin"})
    second = Client()
    second.force_login(users["approver"])
    assert post(second, "user-disable", "admin").status_code == 302
    with pytest.raises(ReplicationError, match=LAST_ADMIN):
        user_admin.disable(system, users["approver"])
    assert fresh("approver").is_active


def test_a_disabled_admin_does_not_count_as_one(admin, users):
    other = user_admin.create_user(audit.Actor.system("tests"), "other-admin", "admin")[0]
    post(admin, "user-disable", "other-admin")
    with pytest.raises(ReplicationError, match=LAST_ADMIN):
        user_admin.set_role(audit.Actor.system("tests"), users["admin"], "operator")
    assert user_admin.role_of(fresh("admin")) == "admin" and not fresh(other.username).is_active


@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("operator", "A user named &#x27;operator&#x27; exists already"),
        ("OPERATOR", "A user named &#x27;OPERATOR&#x27; exists already"),
        ("bad name", "Invalid username &#x27;bad name&#x27;: use 1-150 letters, digits"),
        ("semi;colon", "Invalid username &#x27;semi;colon&#x27;"),
        ("x" * 151, "use 1-150 letters"),
        ("a/b", "Invalid username &#x27;a/b&#x27;"),
    ],
)
def test_duplicate_and_invalid_usernames_are_refused_on_the_form(admin, users, username, message):
    page = create(admin, username)
    assert page.status_code == 200
    assert message in page.content.decode()
    assert 'id="id_username"' in page.content.decode()  # the form again, to correct
    assert get_user_model().objects.count() == len(ROLES)
    assert refusal("user.create").actor == users["admin"]


def test_unknown_roles_and_bad_emails_are_refused_naming_what_is_valid(admin, users):
    page = create(admin, "carol", role="superuser").content.decode()
    assert (
        "Unknown role &#x27;superuser&#x27;; the roles are viewer, operator, approver, admin"
        in page
    )
    page = create(admin, "carol", email="not-an-address").content.decode()
    assert "&#x27;not-an-address&#x27; is not a valid email address" in page
    page = post(admin, "user-role", "viewer", {"role": "root"}).content.decode()
    assert "Unknown role &#x27;root&#x27;" in page
    assert not get_user_model().objects.filter(username="carol").exists()
    assert user_admin.role_of(fresh("viewer")) == "viewer"
    page = create(admin, "carol", email="a@" + "b" * 300 + ".com").content.decode()
    assert "is not a valid email address (at most 254 characters)" in page
    assert AuditEvent.objects.filter(result="refused").count() == 4
    assert not AuditEvent.objects.filter(result="ok").exists()


@pytest.fixture
def trail_down(db):
    """The database refuses new audit events (as a full disk or a revoked grant would)."""
    audit_trail.refuse_writes("the audit disk is full")
    yield
    audit_trail.take_writes()


def test_nothing_changes_when_the_audit_trail_cannot_be_written(admin, users, trail_down):
    refused = "The audit trail could not be written: the database refused the write"
    page = post(admin, "user-disable", "operator").content.decode()
    assert refused in page and "nothing was changed" in page
    assert fresh("operator").is_active
    # Past the up-front probe too: the event is written in the change's own transaction.
    with mock.patch("replication.governance.audit.ensure_writable"):
        page = post(admin, "user-role", "operator", {"role": "viewer"}).content.decode()
        assert refused in page and "nothing was changed" in page
        assert user_admin.role_of(fresh("operator")) == "operator"
        page = create(admin, "dave").content.decode()
        assert refused in page and "nothing was changed" in page
        assert not get_user_model().objects.filter(username="dave").exists()
    assert not AuditEvent.objects.exists()


# Changes at the same moment. ----------------------------------------------------------------


def at_once(*calls) -> list[str]:
    """Run the calls in threads, released together; "ok" or the refusal of each."""
    start = threading.Barrier(len(calls))
    outcomes: list[str] = []

    def run(call):
        start.wait()
        try:
            call()
            outcomes.append("ok")
        except ReplicationError as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


def active_admins() -> list[str]:
    return [
        u.username
        for u in get_user_model().objects.filter(is_active=True)
        if user_admin.role_of(u) == "admin"
    ]


@pytest.mark.django_db(transaction=True)
def test_two_admins_demoting_each_other_at_once_leave_one_admin(users):
    user_admin.set_role(audit.Actor.system("tests"), users["approver"], "admin")
    first, second = users["admin"], users["approver"]
    outcomes = at_once(
        lambda: user_admin.set_role(audit.Actor(user=first, name="admin"), second, "viewer"),
        lambda: user_admin.set_role(audit.Actor(user=second, name="approver"), first, "viewer"),
    )
    assert len(outcomes) == 2 and outcomes.count("ok") == 1, outcomes
    assert len(active_admins()) == 1


@pytest.mark.django_db(transaction=True)
def test_the_last_two_admins_disabled_at_once_leave_one(users):
    """Write skew: each change alone leaves an admin, both together would not. The admins'
    rows are locked (on PostgreSQL; SQLite serializes writers), so the second one waits and
    then sees the first."""
    user_admin.set_role(audit.Actor.system("tests"), users["approver"], "admin")
    system = audit.Actor.system("tests")
    outcomes = at_once(
        lambda: user_admin.disable(system, users["admin"]),
        lambda: user_admin.disable(system, users["approver"]),
    )
    assert sorted(outcomes, key=len) == ["ok", LAST_ADMIN + "; make someone else an admin first."]
    assert len(active_admins()) == 1


def test_a_users_page_leads_back_by_a_breadcrumb_that_ends_at_its_last_link(admin, users):
    page = admin.get(detail("viewer")).content.decode()
    back = f'<a href="{reverse("users")}">Users</a>'
    assert f'<nav class="crumbs" aria-label="Breadcrumb"><p>{back}</p></nav>' in page


def test_deleting_a_user_asks_for_their_name_keeps_it_in_the_audit_trail_and_takes_their_tokens(
    admin, users
):
    operator = users["operator"]
    create_token(audit.Actor(user=operator, name="operator"), operator, "laptop")
    audit.record(audit.Actor(user=operator, name="operator"), "mirror.pause", "mirror x")
    url = reverse("user-delete", args=["operator"])

    asked = admin.get(url).content.decode()
    assert "Delete user operator?" in asked and "cannot be undone" in asked
    mistyped = admin.post(url, {"confirm_name": "operato"})
    model = type(users["operator"])
    assert mistyped.status_code == 302 and model.objects.filter(username="operator").exists()

    deleted = admin.post(url, {"confirm_name": "operator"})
    assert deleted.status_code == 302 and deleted.url == reverse("users")
    assert not model.objects.filter(username="operator").exists()
    assert not ApiToken.objects.filter(name="laptop").exists()
    past = AuditEvent.objects.get(action="mirror.pause")
    assert (past.actor, past.actor_name) == (None, "operator")  # the name stays
    event = only_event("user.delete")
    assert (event.actor, event.target, event.result) == (users["admin"], "user operator", "ok")
    assert event.before == shown("operator", "operator")


def test_an_admin_cannot_delete_themselves(admin, users):
    answer = admin.post(reverse("user-delete", args=["admin"]), {"confirm_name": "admin"})
    assert answer.status_code == 302
    assert type(users["admin"]).objects.filter(username="admin").exists()
    assert refusal("user.delete").message == "You cannot delete yourself; another admin can."
    assert 'id="delete-user"' not in admin.get(detail("admin")).content.decode()
