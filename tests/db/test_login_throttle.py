"""Login throttling: failed logins for one user name, or from one address, lock that name or that
address out for a while; the login page says so in plain words, and every failed login is in
the audit trail. Only the database is needed, not Kafka."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import AuditEvent

pytestmark = [pytest.mark.db, pytest.mark.django_db]

LIMIT = 3
LOCKED = "Too many failed logins for this account or address; try again in 15 minutes"


@pytest.fixture(autouse=True)
def low_limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


def _login(client: Client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


def _logged_in(response) -> bool:
    return response.status_code == 302 and response.url == reverse("dashboard")


def test_repeated_failures_for_a_user_lock_it_out_even_with_the_right_password(client, users):
    for attempt in range(1, LIMIT):
        response = _login(client, "viewer", "wrong")
        assert response.status_code == 200 and LOCKED not in response.text, attempt
    response = _login(client, "viewer", "wrong")
    assert response.status_code == 429
    assert LOCKED in response.text and "ask an admin" in response.text
    # Locked: the right password is refused too, from any address, and says why.
    response = _login(client, "viewer", "viewer-password-1", address="10.0.0.2")
    assert response.status_code == 429 and LOCKED in response.text
    assert not _logged_in(response)
    # Others are not locked out by it.
    assert _logged_in(_login(Client(), "operator", "operator-password-1", address="10.0.0.3"))


def test_repeated_failures_from_an_address_lock_it_out_whatever_the_name(client, users):
    for name in ("nobody-1", "nobody-2", "nobody-3"):
        _login(client, name, "guess", address="10.9.9.9")
    response = _login(Client(), "admin", "admin-password-1", address="10.9.9.9")
    assert response.status_code == 429 and LOCKED in response.text
    assert _logged_in(_login(Client(), "admin", "admin-password-1", address="10.9.9.10"))


def test_a_lockout_ends_after_the_cool_off(client, users):
    for _ in range(LIMIT):
        _login(client, "viewer", "wrong")
    assert _login(client, "viewer", "viewer-password-1").status_code == 429
    # Sixteen minutes later (the attempts' clock turned back rather than waiting).
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert _logged_in(_login(client, "viewer", "viewer-password-1"))


def test_a_successful_login_forgets_earlier_failures(client, users):
    for _ in range(LIMIT - 1):
        _login(client, "viewer", "wrong")
    assert _logged_in(_login(client, "viewer", "viewer-password-1"))
    for _ in range(LIMIT - 1):
        _login(Client(), "viewer", "wrong")
    assert _logged_in(_login(Client(), "viewer", "viewer-password-1"))


def test_every_failed_login_is_audited_with_who_it_claimed_to_be_and_from_where(client, users):
    for _ in range(LIMIT + 1):
        _login(client, "viewer", "wrong", address="10.0.0.7")
    events = list(AuditEvent.plain.filter(action="account.login").order_by("id"))
    assert len(events) == LIMIT + 1
    assert {e.result for e in events} == {AuditEvent.Result.REFUSED}
    assert {e.actor_name for e in events} == {"viewer (not authenticated)"}
    assert {e.address for e in events} == {"10.0.0.7"}
    assert events[0].message == "Wrong user name or password."
    assert events[-1].message.startswith("Locked out: Too many failed logins")
    assert not any("wrong" in (e.message + e.target) for e in events)  # never the password


def test_the_test_clients_login_and_the_api_tokens_are_not_throttled(users):
    # Client.login() authenticates without a request: not a guess at the login page.
    for _ in range(LIMIT + 1):
        assert not Client().login(username="viewer", password="wrong")
    assert Client().login(username="viewer", password="viewer-password-1")
    # A user locked out of the login page keeps the API tokens they made.
    for _ in range(LIMIT):
        _login(Client(), "viewer", "wrong")
    _, secret = create_token(audit.Actor.system("tests"), users["viewer"], "t1")
    response = Client().get("/kafka/v3/clusters", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200, response.content


def test_signing_in_and_out_of_the_console_is_audited_as_the_user_from_where(client, users):
    assert _logged_in(_login(client, "viewer", "viewer-password-1", address="10.0.0.9"))
    client.post(reverse("logout"), REMOTE_ADDR="10.0.0.9")
    assert client.get(reverse("dashboard")).status_code == 302  # signed out

    events = list(AuditEvent.plain.filter(action__startswith="account.").order_by("id"))
    assert [(e.action, e.result) for e in events] == [
        ("account.login", AuditEvent.Result.OK),
        ("account.logout", AuditEvent.Result.OK),
    ]
    assert {(e.actor, e.actor_name, e.address) for e in events} == {
        (users["viewer"], "viewer", "10.0.0.9")
    }


def test_a_user_name_longer_than_any_account_is_refused_before_it_is_tried(client, db):
    answer = client.post(reverse("login"), {"username": "x" * 100_000, "password": "whatever"})

    assert answer.status_code == 200
    assert "A user name has at most 150 characters" in answer.content.decode()
    assert not AccessAttempt.objects.exists()  # nothing recorded that its column cannot hold
