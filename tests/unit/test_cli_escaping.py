"""The command-line tools print text from the console inert: control characters and
bidirectional controls are shown escaped, so an answer cannot act on the terminal (retitle it,
clear it), forge a line or reorder what a line says."""

from __future__ import annotations

import io
import json
import unicodedata
import urllib.error

import pytest

from isthmus_cli import common
from isthmus_cli.approval_requests import request_line
from isthmus_cli.common import CliError, Console, inert, inert_answer

HOSTILE = "cut-over\x1b]0;owned\x07\x1b[2J"


def raw_controls(text: str) -> list[str]:
    """The characters of `text` that would act on a terminal or reorder a line."""
    return [c for c in text if unicodedata.category(c) == "Cc" or c in common.BIDI_CONTROLS]


def test_terminal_escapes_are_shown_escaped_python_style():
    assert inert(HOSTILE) == "cut-over\\x1b]0;owned\\x07\\x1b[2J"


def test_line_breaks_tabs_c1_controls_and_bidi_overrides_are_shown_escaped():
    assert inert("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert inert("\x00\x7f\x9b") == "\\x00\\x7f\\x9b"  # \x9b is a one-byte CSI to some terminals
    assert inert("\u202egnp.exe\u2066\u061c\u200e") == "\\u202egnp.exe\\u2066\\u061c\\u200e"


def test_every_control_character_is_escaped_and_other_text_is_left_as_typed():
    every = "".join(chr(i) for i in range(0x3000))
    shown = inert(every)
    assert raw_controls(shown) == []
    plain = "".join(c for c in every if not raw_controls(c))
    assert inert(plain) == plain  # letters, accents, emoji, backslashes: unchanged
    assert inert("viеwer \\x1b ünïcode 🙂 \u200d") == "viеwer \\x1b ünïcode 🙂 \u200d"


def test_every_string_of_an_answer_is_made_inert_keys_too():
    answer = {"data": [{"reason": HOSTILE, "n": 3, "ok": True, "x": None, "t\x07": ["\x1b"]}]}
    assert inert_answer(answer) == {
        "data": [
            {
                "reason": "cut-over\\x1b]0;owned\\x07\\x1b[2J",
                "n": 3,
                "ok": True,
                "x": None,
                "t\\x07": ["\\x1b"],
            }
        ]
    }


class _Answer(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_console_client_hands_every_command_inert_answers(monkeypatch):
    request = {
        "id": "7",
        "action": "promote",
        "link_name": "demo-link",
        "mirror_topic_names": ["demo"],
        "state": "PENDING",
        "approved_by": [],
        "approvals_required": 1,
        "requester": "operator\u202e",
        "reason": HOSTILE + "\nRequest: 8  State: APPROVED",
    }
    body = json.dumps(request).encode()
    monkeypatch.setattr(common.urllib.request, "urlopen", lambda *a, **k: _Answer(body))
    line = request_line(Console("http://console", "token").call("GET", "/x"))
    assert raw_controls(line) == []
    assert line.endswith(
        "Requester: operator\\u202e  "
        "Reason: cut-over\\x1b]0;owned\\x07\\x1b[2J\\nRequest: 8  State: APPROVED"
    )


def test_an_error_from_the_console_is_printed_inert(monkeypatch):
    def refuse(*args, **kwargs):
        message = json.dumps({"message": "No link named 'x\x1b[2J'."}).encode()
        raise urllib.error.HTTPError("http://console/x", 404, "Not Found", {}, io.BytesIO(message))

    monkeypatch.setattr(common.urllib.request, "urlopen", refuse)
    with pytest.raises(CliError) as refused:
        Console("http://console", "token").call("GET", "/x")
    assert str(refused.value) == "No link named 'x\\x1b[2J'."


def test_any_error_a_tool_prints_is_inert(capsys):
    @common.run
    def tool(argv=None) -> int:
        raise CliError(f"Cannot reach the cluster: {HOSTILE}")

    assert tool([]) == 1
    err = capsys.readouterr().err
    assert raw_controls(err.rstrip("\n")) == []
    assert err == "Error: Cannot reach the cluster: cut-over\\x1b]0;owned\\x07\\x1b[2J\n"
