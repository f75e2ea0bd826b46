"""Every answer carries the console's Content-Security-Policy and X-Frame-Options, the refusals
of the middleware that reads a request before any view (an unreadable form, a NUL character)
included: a page that refuses a request can be framed no more than any other."""

from __future__ import annotations

import pytest

from console.middleware import CONTENT_SECURITY_POLICY

pytestmark = pytest.mark.django_db


def _protected(answer) -> bool:
    return (
        answer["X-Frame-Options"] == "DENY"
        and answer["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    )


def test_pages_and_api_answers_carry_the_content_security_policy_and_refuse_framing(
    client_as,
):
    client = client_as("viewer")
    for path in ("/", "/links/", "/kafka/v3/clusters", "/login/", "/no-such-page/"):
        answer = client.get(path)
        assert _protected(answer), (path, answer.status_code)


def test_refusals_of_the_form_reading_middleware_cannot_be_framed_either(client_as):
    client = client_as("operator")
    unreadable = client.post("/links/", data=b'{"a": 1}', content_type="application/json")
    with_nul = client.get("/links/?q=%00")
    too_many = client.post(
        "/links/",
        data="&".join(f"f{i}=1" for i in range(5000)),
        content_type="application/x-www-form-urlencoded",
    )
    for answer in (unreadable, with_nul, too_many):
        assert answer.status_code in (400, 415), answer.status_code
        assert _protected(answer), answer.status_code
