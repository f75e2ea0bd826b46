"""A password an admin hands over is for the first sign-in only: the user chooses their own
before anything else opens; and anyone may change their own password from their account."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from replication.governance import audit
from replication.governance import users as accounts
from replication.models import AuditEvent, OneTimePassword
from tests.url_routes import api_routes

pytestmark = pytest.mark.django_db

CHOSEN = "a-long-passphrase-of-mine"


def _sign_in(client: Client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


def _choose(client: Client, old: str, new: str, again: str | None = None):
    return client.post(
        reverse("account-password"),
        {"old_password": old, "new_password": new, "new_password_again": again or new},
    )


def _as(user) -> audit.Actor:
    return audit.Actor(user=user, name=user.get_username())


def test_a_new_user_signed_in_with_a_one_time_password_chooses_their_own_before_anything(users):
    alice, one_time = accounts.create_user(_as(users["admin"]), "alice", "operator")
    client = Client()

    signed_in = _sign_in(client, "alice", one_time)
    assert signed_in.status_code == 302 and signed_in.url == reverse("account-password")
    for page in (reverse("dashboard"), reverse("links"), reverse("account")):
        answer = client.get(page)
        assert answer.status_code == 302 and answer.url == reverse("account-password"), page
    poll = client.get(reverse("dashboard"), HTTP_HX_REQUEST="true")
    assert poll["HX-Redirect"] == reverse("account-password")  # an HTMX poll too
    form = client.get(reverse("account-password")).content.decode()
    assert 'id="one-time"' in form and "only this page opens" in form

    chosen = _choose(client, one_time, CHOSEN)
    assert chosen.status_code == 302 and chosen.url == reverse("dashboard")
    assert client.get(reverse("dashboard")).status_code == 200  # the same session goes on
    assert not OneTimePassword.objects.filter(user=alice).exists()
    assert not Client().login(username="alice", password=one_time)
    assert Client().login(username="alice", password=CHOSEN)
    event = AuditEvent.objects.filter(action="user.password").latest("id")
    assert (event.actor, event.target, event.result) == (alice, "user alice", "ok")
    assert event.message == "Chose their own password." and CHOSEN not in event.message


@pytest.mark.parametrize(
    "old,new,again,said",
    [
        ("not-it", CHOSEN, None, "That is not your current password."),
        ("viewer-password-1", CHOSEN, CHOSEN + "x", "The two new passwords differ"),
        ("viewer-password-1", "password", None, "This password is too common."),
        ("viewer-password-1", "short", None, "too short"),
        ("viewer-password-1", "viewer-password-1", None, "other than the current one"),
    ],
)
def test_a_wrong_current_password_or_a_poor_new_one_is_refused_and_changes_nothing(
    client_as, users, old, new, again, said
):
    client = client_as("viewer")
    answer = _choose(client, old, new, again)
    assert answer.status_code == 400 and said in answer.content.decode()
    users["viewer"].refresh_from_db()
    assert users["viewer"].check_password("viewer-password-1")
    assert not AuditEvent.objects.filter(action="user.password", result="ok").exists()


def test_anyone_changes_their_own_password_from_their_account_and_stays_signed_in(client_as, users):
    client = client_as("viewer")
    assert reverse("account-password") in client.get(reverse("account")).content.decode()
    changed = _choose(client, "viewer-password-1", CHOSEN)
    assert changed.status_code == 302 and changed.url == reverse("account")
    assert client.get(reverse("links")).status_code == 200
    assert Client().login(username="viewer", password=CHOSEN)


def test_a_password_an_admin_resets_is_one_time_again(users):
    _, given = accounts.reset_password(_as(users["admin"]), users["operator"])
    signed_in = _sign_in(Client(), "operator", given)
    assert signed_in.status_code == 302 and signed_in.url == reverse("account-password")


def test_the_api_refuses_a_session_still_holding_a_one_time_password(users):
    """The API is held like the console: the same session cookie with its CSRF token reads and
    changes nothing through any route and method until the user has chosen their own password
    (the refusal comes before the route looks at its parameters, so any will do)."""
    _, password = accounts.create_user(_as(users["admin"]), "olga", "operator")
    client = Client(enforce_csrf_checks=True)
    _sign_in_csrf(client, "olga", password)
    token = client.cookies["csrftoken"].value
    routes = [("/kafka/v3" + re.sub(r"\{\w+\}", "x", path), m) for path, m in api_routes()]
    routes.append(("/metrics", "GET"))
    for concrete, method in routes:
        answer = client.generic(method, concrete, HTTP_X_CSRFTOKEN=token)
        assert answer.status_code == 403, (method, concrete, answer.content)
        assert "one-time password" in answer.json()["message"], (method, concrete)
    mutating = sum(method != "GET" for _, method in routes)
    refused = AuditEvent.objects.filter(action="api.authenticate", result="refused")
    assert refused.count() == mutating > 0

    client.post(
        reverse("account-password"),
        {"old_password": password, "new_password": CHOSEN, "new_password_again": CHOSEN},
        HTTP_X_CSRFTOKEN=token,
    )
    assert client.get("/kafka/v3/clusters", HTTP_X_CSRFTOKEN=token).status_code == 200


def _sign_in_csrf(client: Client, username: str, password: str) -> None:
    client.get(reverse("login"))
    token = client.cookies["csrftoken"].value
    answer = client.post(
        reverse("login"), {"username": username, "password": password}, HTTP_X_CSRFTOKEN=token
    )
    assert answer.status_code == 302 and answer.url == reverse("account-password")
