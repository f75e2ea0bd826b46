"""A pasted Replicator configuration that Python's own readers give up on (JSON nested past the
recursion limit, a number of thousands of digits, a setting that is a deeply nested list) and a
`topic.regex` that would backtrack for seconds: each refused, or run, in words and at once,
never a server error."""

from __future__ import annotations

import json
import time

import pytest

from replication.actions.replicator_import import parse, selected
from replication.core.errors import ReplicationError
from replication.core.text import json_document


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"config": ' * 10_000 + "{}" + "}" * 10_000, "nested too deeply"),
        ('{"config": {"topic.whitelist": ' + "9" * 5000 + "}}", "a number too long"),
    ],
)
def test_json_python_gives_up_on_is_refused_in_words(text, said):
    with pytest.raises(ReplicationError) as refused:
        parse(text)
    message = str(refused.value)
    assert said in message and "Paste Connect's JSON, or a properties file." in message
    assert "RecursionError" not in message and "int_max_str_digits" not in message
    assert refused.value.status == 400


def test_a_setting_that_is_a_list_or_an_object_is_refused_however_deep():
    deep = "[" * 900 + "]" * 900  # within what json reads, past what str() of it could take
    for value in (deep, '{"a": 1}', '["orders", "clicks"]'):
        with pytest.raises(ReplicationError, match="a Replicator setting is a string"):
            parse('{"config": {"topic.whitelist": ' + value + "}}")
    with pytest.raises(ReplicationError, match="Setting 'name' is a JSON object"):
        parse(json.dumps({"name": {"x": 1}, "config": {"topic.whitelist": "a"}}))


def test_numbers_and_booleans_are_still_read_as_written():
    settings = parse('{"config": {"tasks.max": 4, "provenance.header.enable": false, "x": null}}')
    assert settings == {"tasks.max": "4", "provenance.header.enable": "False", "x": ""}


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b'{"a": "\xff"}', "send it as UTF-8"),
        ("[" * 100_000, "nested too deeply"),
        ('{"a": ' + "9" * 5000 + "}", "a number too long"),
        ('{"a": 1', "not valid JSON (line 1, column 8: expecting ',' delimiter)"),
    ],
)
def test_the_shared_json_reader_says_what_is_wrong(raw, said):
    with pytest.raises(ReplicationError, match=None) as refused:
        json_document(raw, "request body")
    assert said in str(refused.value) and str(refused.value).startswith("The request body ")


def test_a_backtracking_pattern_runs_in_linear_time():
    # Python's re took 3.7 s for this on a 27-character name, doubling with each character.
    topics = {"x" * n for n in range(18, 26)} | {"xxy"}
    began = time.monotonic()
    assert selected({"topic.regex": "(x+x+)+y"}, topics) == ["xxy"]
    assert time.monotonic() - began < 0.5


@pytest.mark.parametrize("pattern", ["(?=orders)orders.*", r"(a)\1", "orders.*+"])
def test_a_pattern_re2_cannot_run_is_refused_saying_so(pattern):
    with pytest.raises(ReplicationError) as refused:
        selected({"topic.regex": pattern}, {"orders"})
    message = str(refused.value)
    assert "a regular expression Isthmus cannot run" in message
    assert "matched with RE2, which takes no look-arounds, back-references" in message


def test_a_pattern_that_is_no_regex_or_too_long_is_refused():
    with pytest.raises(ReplicationError, match="is not a regular expression"):
        selected({"topic.regex": "(orders"}, {"orders"})
    with pytest.raises(ReplicationError, match="at most 1000 are taken"):
        selected({"topic.regex": "a" * 1001}, {"orders"})
