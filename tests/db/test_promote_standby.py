"""The standby's promotion refused before anything is changed (replication/engine/standby.py,
`manage.py promote_standby`): without a reason, with control characters in it, and on a
database that is no standby (SQLite here, a primary under ISTHMUS_DB=postgres). A real standby
promoted, and refused while its primary answers: tests/ha/test_region_standby.py."""

from __future__ import annotations

import socket
import time

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from replication.core.errors import ReplicationError
from replication.engine import standby
from replication.governance import audit
from replication.models import AuditEvent

pytestmark = pytest.mark.django_db

ACTOR = audit.Actor.system("tests")


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_promotion_without_a_reason_is_refused(reason):
    with pytest.raises(ReplicationError, match=r"Say why \(--reason"):
        standby.promote(ACTOR, reason)
    assert not AuditEvent.objects.exists()


def test_a_reason_with_control_characters_is_refused():
    with pytest.raises(ReplicationError, match="control characters"):
        standby.promote(ACTOR, "region lost\x1b[2J")
    assert not AuditEvent.objects.exists()


def test_a_database_that_is_no_standby_is_not_promoted():
    expected = "nothing to promote" if connection.vendor == "sqlite" else "is not a standby"
    with pytest.raises(CommandError, match=expected):
        call_command("promote_standby", reason="region A is gone")
    assert not AuditEvent.objects.exists()


def test_a_primary_that_does_not_listen_does_not_answer():
    with socket.socket() as unused:  # a port nothing listens on once closed
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    began = time.monotonic()
    assert not standby.primary_answers("127.0.0.1", port)
    assert time.monotonic() - began < standby.ANSWER_TIMEOUT_S + 1


def test_what_to_do_next_says_to_stop_an_old_primary_that_still_answered():
    forced = standby.Promotion("127.0.0.1:5434/isthmus", "127.0.0.1:5433", True, 0.2, "engine")
    steps = "\n".join(standby.next_steps(forced))
    assert "The old primary at 127.0.0.1:5433 still answered: stop it" in steps
    assert "rebuild its database as a standby of this one (it was the primary" in steps
    quiet = standby.Promotion("127.0.0.1:5434/isthmus", "", False, 0.2, "engine")
    assert "still answered" not in "\n".join(standby.next_steps(quiet))


def test_a_primarys_supervisor_supervises_and_a_standbys_starts_nothing(monkeypatch, caplog):
    from replication.engine import supervise

    assert not standby.waiting_for_promotion()  # SQLite, or a PostgreSQL primary
    rounds = []
    monkeypatch.setattr(supervise, "supervise_engine", lambda: rounds.append("engine"))
    supervise.supervise_all()
    assert rounds == ["engine"]

    # A standby not promoted yet (PostgreSQL in recovery): no engine, and it says why.
    monkeypatch.setattr(standby, "waiting_for_promotion", lambda: True)
    monkeypatch.setattr(supervise, "_standby_said_at", 0.0)
    supervise.supervise_all()
    supervise.supervise_all()
    assert rounds == ["engine"]
    said = [r.message for r in caplog.records if "standby" in r.message]
    assert said == [
        "This database is a standby; waiting for promotion (manage.py promote_standby) before "
        "starting the engine"
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a PostgreSQL server")
def test_a_primary_that_refuses_the_connection_in_its_own_words_still_answers(settings):
    # A server that answers with an error of its own (here: no such database) is there: a
    # promotion beside it would make two primaries.
    db = settings.DATABASES["default"]
    settings.DATABASES = {"default": {**db, "NAME": "no_such_database_here"}}
    assert standby.primary_answers(db.get("HOST") or "localhost", int(db.get("PORT") or 5432))
