"""The schema registry client's one door (infra/registry_http.py) against a server a
registry's owner controls: no redirect is followed, an answer takes no longer than the
deadline however it is trickled and is no larger than MAX_ANSWER, only what Confluent's API
defines is taken from it (a mode, a bounded and inert error message), and credentials outside
Latin-1 are sent as UTF-8 (RFC 7617)."""

from __future__ import annotations

import base64
import time
import unicodedata

import pytest

from infra import registry_http
from infra.registry_http import MAX_SAID, SchemaRegistryError
from infra.schema_registry import SchemaRegistry
from tests.hostile_registry import redirect as redirect_to
from tests.hostile_registry import registry, send_json, serve, trickle


def test_a_redirect_is_refused_saying_so_and_the_other_address_is_never_asked():
    with (
        serve(registry(mode="PWNED-BY-ELSEWHERE")) as elsewhere,
        serve(redirect_to(elsewhere.url)) as registered,
    ):
        client = SchemaRegistry(registered.url, "reader", "s3cret", timeout=3)
        for read in (client.subjects, client.mode):
            with pytest.raises(SchemaRegistryError) as refused:
                read()
            said = str(refused.value)
            assert "answered with a redirect (HTTP 302)" in said
            assert "Give the registry's own URL" in said
            assert elsewhere.url not in said
    assert elsewhere.asked == []  # nothing of it was read, nor the credentials sent there


@pytest.mark.parametrize(
    "mode", ["<b>owned</b>", "\x1b]0;pwned\x07", "READWRITE\u202e", "", 42, ["IMPORT"], None]
)
def test_a_mode_outside_confluents_api_is_an_error_in_our_words_not_the_value(mode):
    with serve(registry(mode=mode)) as server, pytest.raises(SchemaRegistryError) as refused:
        SchemaRegistry(server.url, timeout=3).mode()
    said = str(refused.value)
    assert "names no mode of Confluent's API" in said
    assert "READWRITE, READONLY, READONLY_OVERRIDE" in said
    if isinstance(mode, str) and mode:
        assert mode not in said
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in said)


@pytest.mark.parametrize("mode", ["READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"])
def test_each_mode_confluents_api_defines_is_read(mode):
    with serve(registry(mode=mode)) as server:
        assert SchemaRegistry(server.url, timeout=3).mode() == mode


def test_a_registrys_error_message_is_bounded_and_stripped_of_control_characters():
    message = (
        "Subject \x1b[2J\x1b]0;owned\x07not\u202egnp.live found\r\nFAKE LOG LINE " + "A" * 5000
    )

    def answer(handler):
        send_json(handler, 404, {"error_code": 40401, "message": message})

    with serve(answer) as server, pytest.raises(SchemaRegistryError) as refused:
        SchemaRegistry(server.url, timeout=3).version("orders-value", 1)
    said = str(refused.value)
    assert refused.value.code == 40401
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in said)
    assert "the registry said: Subject [2J ]0;owned not gnp.live found FAKE LOG LINE AAA" in said
    registry_words = said.split("the registry said: ", 1)[1]
    assert len(registry_words) <= MAX_SAID + 1  # and our full stop
    assert registry_words.endswith("….")


def test_an_error_code_that_is_not_a_number_is_not_taken():
    def answer(handler):
        send_json(handler, 422, {"error_code": "42205", "message": "no"})

    with serve(answer) as server, pytest.raises(SchemaRegistryError) as refused:
        SchemaRegistry(server.url, timeout=3).subjects()
    assert refused.value.code is None and refused.value.status == 422


@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_an_answer_trickled_a_byte_at_a_time_ends_at_the_deadline(headers):
    with serve(trickle(every_s=0.3, for_s=20, headers=headers)) as server:
        client = SchemaRegistry(server.url, timeout=1.5)
        started = time.monotonic()
        with pytest.raises(SchemaRegistryError) as late:
            client.subjects()
        took = time.monotonic() - started
    # Far short of the 20 s it trickles for; not to the tenth of a second: the fast tier runs
    # at the lowest priority beside the Kafka tier (3.1 s once).
    assert took < 6, f"held {took:.1f} s for a deadline of 1.5 s"
    assert "it did not answer within 1.5 s" in str(late.value)


def test_an_answer_larger_than_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(registry_http, "MAX_ANSWER", 10_000)

    def unsized(handler):  # no Content-Length: only reading tells
        handler.send_response(200)
        handler.end_headers()
        for _ in range(100):
            handler.wfile.write(b"[" * 1000)

    def declared(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(10**12))
        handler.end_headers()

    for answer in (unsized, declared):
        with serve(answer) as server, pytest.raises(SchemaRegistryError) as refused:
            SchemaRegistry(server.url, timeout=3).subjects()
        assert "its answer is larger than" in str(refused.value)
        assert "points at a schema registry" in str(refused.value)


@pytest.mark.parametrize(
    "body", [[1, "a"], {"a": 1}, "subjects", [["nested"]]], ids=["mixed", "object", "text", "deep"]
)
def test_subjects_that_are_not_a_list_of_names_are_not_a_registrys_answer(body):
    answer = lambda handler: send_json(handler, 200, body)  # noqa: E731
    with serve(answer) as server, pytest.raises(SchemaRegistryError) as refused:
        SchemaRegistry(server.url, timeout=3).subjects()
    assert "not Schema Registry JSON" in str(refused.value)


@pytest.mark.parametrize(
    ("username", "password"), [("probe4-€", "p€ß中"), ("ключ", "秘密"), ("latin-é", "pw")]
)
def test_credentials_outside_latin_1_are_sent_as_utf_8(username, password):
    with serve(registry()) as server:
        client = SchemaRegistry(server.url, username, password, timeout=3)
        assert client.subjects() == ["orders-value"]
        assert client.mode() == "READWRITE"
    for asked in server.asked:
        scheme, token = asked.headers["Authorization"].split(" ", 1)
        assert scheme == "Basic"
        assert base64.b64decode(token).decode("utf-8") == f"{username}:{password}"


def test_a_registry_that_answers_in_time_is_read_request_after_request():
    with serve(registry()) as server:
        client = SchemaRegistry(server.url, timeout=3)
        for _ in range(20):
            assert client.subjects() == ["orders-value"]
        assert len(server.asked) == 20


def test_the_engines_schema_gate_follows_no_redirect_either():
    """The copier's own lookups (spark_jobs/schema_gate.py, standard library only) refuse a
    redirect as the console's client does: the other address is never asked."""
    from spark_jobs.schema_gate import Registry, Unanswered

    with (
        serve(registry()) as elsewhere,
        serve(redirect_to(elsewhere.url)) as registered,
        pytest.raises(Unanswered, match="answered HTTP 302"),
    ):
        Registry({"url": registered.url, "username": "reader", "password": "s"}).schema(1)
    assert elsewhere.asked == []
