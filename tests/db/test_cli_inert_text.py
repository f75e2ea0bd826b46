"""Text stored before the console refused control characters still prints inert: the tools
show an approval request's terminal escapes escaped, against a live console (in the test's
process, on in-memory clusters)."""

from __future__ import annotations

import datetime as dt
import shlex
import subprocess

import pytest
from django.utils import timezone

from replication.models import ApprovalRequest
from tests.db.test_cli import DESTINATION

# Retitles the terminal (OSC 0 … BEL) and clears it (CSI 2 J); a line break forges a line.
HOSTILE_REASON = "cut-over\x1b]0;owned\x07\x1b[2J\nRequest: 99  State: APPROVED"
SHOWN_REASON = "cut-over\\x1b]0;owned\\x07\\x1b[2J\\nRequest: 99  State: APPROVED"
RAW = ("\x1b", "\x07", "\u202e")


@pytest.fixture
def kafka_mirrors(typed):
    """Run kafka-mirrors against the live console as the approver, on the destination."""

    def run(*args: str) -> subprocess.CompletedProcess:
        line = f"kafka-mirrors --bootstrap-server {DESTINATION} {shlex.join(args)}"
        return typed(line, role="approver")

    return run


@pytest.fixture
def stored_request(make_link, users) -> ApprovalRequest:
    """A request stored as older data may hold it: written to the database directly, past the
    checks that now refuse control characters (on a live link, by a user who may ask, so it
    stays open)."""
    link = make_link()
    return ApprovalRequest.objects.create(
        link=link,
        link_name=link.name,
        destination=link.destination,
        action=ApprovalRequest.Action.PROMOTE,
        topics=["demo"],
        reason=HOSTILE_REASON,
        requester=users["operator"],
        requester_name="operator\u202e",
        approvals_required=2,
        expires_at=timezone.now() + dt.timedelta(hours=1),
        result=[{"mirror_topic": "demo", "error": "gone\x1b[2J", "state": "ACTIVE", "lags": {}}],
    )


def assert_inert(output: str) -> None:
    assert not [c for c in RAW if c in output], repr(output)


def test_a_reason_with_terminal_escapes_prints_inert_in_list_requests(
    kafka_mirrors, stored_request
):
    listed = kafka_mirrors("--list-requests")
    assert listed.returncode == 0, listed.stderr
    assert_inert(listed.stdout)
    [line] = listed.stdout.splitlines()  # the line break in the reason forged no line
    assert line.startswith(f"Request: {stored_request.pk}  Action: promote  ")
    assert line.endswith(f"Requester: operator\\u202e  Reason: {SHOWN_REASON}")


def test_a_reason_with_terminal_escapes_prints_inert_in_describe_request(
    kafka_mirrors, stored_request
):
    described = kafka_mirrors("--describe-request", str(stored_request.pk))
    assert described.returncode == 0, described.stderr
    assert_inert(described.stdout)
    lines = described.stdout.splitlines()  # the line break in the reason forged no line
    assert lines[0] == (
        f"Request: {stored_request.pk}  Action: promote  Link: {stored_request.link_name}  "
        "Topics: [demo]  "
        f"State: PENDING  Approvals: 0/2  Requester: operator\\u202e  Reason: {SHOWN_REASON}"
    )
    assert "    Topic: demo  State: ACTIVE  Error: gone\\x1b[2J" in lines
    assert not [line for line in lines if SHOWN_REASON in line][1:]
