"""Ordinary refusals (4xx) are one line in the log, never a traceback; and a call under the API
roots for a host the console does not serve is refused in the v3 envelope, not an HTML page.
Only the database is needed, not Kafka."""

from __future__ import annotations

import io
import logging

import pytest

from console.log_filters import OneLineFor4xx

pytestmark = [pytest.mark.db, pytest.mark.django_db]

TRACEBACK = "Traceback (most recent call last)"


@pytest.fixture
def console_log():
    """What the console's log handler (LOGGING's `console`) writes, as an operator reads it."""
    (handler,) = [
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, OneLineFor4xx) for f in h.filters)
    ]
    captured = io.StringIO()
    previous = handler.setStream(captured)
    try:
        yield captured
    finally:
        handler.setStream(previous)


@pytest.mark.parametrize("path", ["/", "/links/", "/kafka/v3/clusters"])
def test_a_host_not_served_is_one_warning_line_without_a_traceback(client, console_log, path):
    response = client.get(path, HTTP_HOST="evil.example")
    assert response.status_code == 400
    logged = console_log.getvalue()
    assert TRACEBACK not in logged, logged
    lines = logged.strip().splitlines()
    assert len(lines) == 1, logged
    assert "WARNING django.security.DisallowedHost" in lines[0]
    assert "evil.example" in lines[0]


def test_a_host_not_served_under_the_api_is_refused_in_the_v3_envelope(client):
    for path in ("/kafka/v3/clusters", "/kafka/some-cluster/v3/clusters", "/kafka/v3/nowhere"):
        response = client.get(path, HTTP_HOST="evil.example")
        assert response.status_code == 400
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert body["error_code"] == 40002
        assert "does not serve the host" in body["message"]
    # A host it serves is unaffected: the same call asks for credentials.
    assert client.get("/kafka/v3/clusters").json()["error_code"] == 40101


def test_a_404_and_a_role_refusal_are_one_line_without_a_traceback(client_as, console_log):
    client = client_as("viewer")
    assert client.get("/no-such-page/").status_code == 404
    assert client.get("/users/").status_code == 403  # console.access: PermissionDenied
    assert client.get("/kafka/v3/no-such-call").status_code == 404
    logged = console_log.getvalue()
    assert TRACEBACK not in logged, logged
    lines = logged.strip().splitlines()
    assert len(lines) == 3, logged
    assert "Not Found: /no-such-page/" in lines[0]
    assert "Forbidden (Permission denied): /users/ (Your role does not allow" in lines[1]
    assert all(" WARNING " in line for line in lines), lines


def test_a_failure_of_the_console_keeps_its_traceback(console_log):
    # The filter leaves 5xx alone: they are the console's own faults, to be looked into.
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("django.request").error(
            "Internal Server Error: /x", exc_info=True, extra={"status_code": 500}
        )
    assert TRACEBACK in console_log.getvalue()
