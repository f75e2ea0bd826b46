"""A new username that looks like an existing one (another script's letters, another case) or
holds control characters is refused: approvers and readers of the audit trail must be able to
tell users apart by name. Only the database is needed, not Kafka."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from replication.core.errors import FieldProblems
from replication.governance import audit
from replication.governance import users as user_admin
from replication.models import AuditEvent

pytestmark = pytest.mark.db

CYRILLIC_VIEWER = "vi\u0435wer"  # е: CYRILLIC SMALL LETTER IE
SYSTEM = audit.Actor.system("tests")


def refused_name(username: str) -> FieldProblems:
    with pytest.raises(FieldProblems) as refused:
        user_admin.create_user(SYSTEM, username, "viewer")
    assert list(refused.value.problems) == ["username"]  # said under the username field
    assert not get_user_model().objects.filter(username=username).exists()
    return refused.value


def test_a_cyrillic_letter_for_a_latin_one_is_refused_as_looking_like_an_existing_user(users):
    refusal = refused_name(CYRILLIC_VIEWER)
    assert str(refusal) == (
        f"'{CYRILLIC_VIEWER}' looks like existing user 'viewer'; pick a name that cannot be "
        "mistaken for it."
    )
    assert refusal.status == 409


def test_a_name_differing_only_in_case_is_refused_as_existing(users):
    for username in ("Viewer", "VIEWER", "ＶＩＥＷＥＲ"):  # fullwidth, NFKC-folded
        refusal = refused_name(username)
        assert str(refusal) == f"A user named {username!r} exists already; pick another name."


@pytest.mark.parametrize(
    ("username", "existing"),
    [
        ("Iinda", "linda"),  # a capital I looks like a small L
        ("\u0430dmin", "admin"),  # а: CYRILLIC SMALL LETTER A
        ("R0B", "ROB"),  # a zero for a capital O
        ("rnallory", "mallory"),  # r and n side by side look like an m
    ],
)
def test_other_lookalikes_are_refused(users, username, existing):
    if existing not in users:
        user_admin.create_user(SYSTEM, existing, "viewer")
    assert f"looks like existing user {existing!r}" in str(refused_name(username))


def test_a_genuinely_different_name_is_accepted(users):
    for username in ("viewers", "reviewer", "viewer2", "josé", "Влад"):
        user, _ = user_admin.create_user(SYSTEM, username, "viewer")
        assert user.get_username() == username


@pytest.mark.parametrize(
    ("username", "shown"),
    [("bob\x1b]0;owned\x07", "U+0007, U+001B"), ("alice\u202e", "U+202E"), ("a\nb", "U+000A")],
)
def test_control_characters_in_a_username_are_refused_naming_them(users, username, shown):
    refusal = refused_name(username)
    assert f"The username holds control characters ({shown})" in str(refusal)


def test_the_users_page_shows_the_lookalike_refusal_and_audits_it(client_as, users):
    page = client_as("admin").post(
        reverse("user-create"), {"username": CYRILLIC_VIEWER, "role": "viewer", "email": ""}
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert f"&#x27;{CYRILLIC_VIEWER}&#x27; looks like existing user &#x27;viewer&#x27;" in html
    assert 'id="id_username"' in html  # the form again, to correct
    (event,) = AuditEvent.objects.filter(action="user.create")
    assert event.result == AuditEvent.Result.REFUSED
    assert "looks like existing user 'viewer'" in event.message
