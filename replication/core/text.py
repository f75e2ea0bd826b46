"""Text people type (reasons, names, descriptions) checked at the door: no control characters,
which would act on an approver's terminal (ESC sequences retitle and clear it) or hide what a
line says (bidirectional overrides)."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from replication.core.errors import ReplicationError

# Bidirectional controls reorder what a reader sees ("Trojan Source"); the rest of category
# Cf (zero-width joiners in emoji, say) is harmless.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def _is_control(c: str) -> bool:
    return unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS


# The same characters as one pattern (category Cc is exactly U+0000-001F and U+007F-009F), so
# text without any, nearly all of it, is passed over at C speed (every log line goes through).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(sorted(_BIDI_CONTROLS)) + "]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(found: re.Match) -> str:
    c = found.group()
    return _SHORT.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def escaped(text: str) -> str:
    """`text` with each control character shown as an escape, Python-style (`\\x1b`, `\\n`,
    `\\u202e`): inert wherever it is shown (a terminal, a spreadsheet, a log file). Older data
    may still hold what the door now refuses."""
    return _CONTROL.sub(_escape, text)


def control_characters(text: str, *, multiline: bool = False) -> list[str]:
    """The control characters in `text`, each once, by code point (`U+001B` for ESC); line
    breaks and tabs allowed when `multiline`."""
    allowed = "\n\r\t" if multiline else ""
    found = {c for c in text if _is_control(c) and c not in allowed}
    return sorted(f"U+{ord(c):04X}" for c in found)


def plain(text: str, what: str, *, multiline: bool = False) -> str:
    """`text` unchanged if it holds no control character; else refused, naming them."""
    found = control_characters(text, multiline=multiline)
    if found:
        raise ReplicationError(
            f"The {what} holds control characters ({', '.join(found[:5])}), which could act on "
            "the terminals and files it is shown in; remove them. Nothing was changed."
        )
    return text


def json_document(raw: str | bytes, what: str) -> Any:
    """`raw` read as JSON; refused in words (what is wrong, where) for anything Python's
    reader cannot take, including what it gives up on with its own errors: nesting deeper than
    its recursion limit, and an integer of more digits than it converts (a pasted or sent
    document must never end in a server error)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ReplicationError(
            f"The {what} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg.lower()})."
        ) from None
    except UnicodeDecodeError:  # bytes; before ValueError, of which it is one
        raise ReplicationError(f"The {what} is not valid JSON: send it as UTF-8.") from None
    except RecursionError:
        raise ReplicationError(
            f"The {what} is nested too deeply to be read; no JSON it should be needs that depth."
        ) from None
    except ValueError:  # int() past sys.get_int_max_str_digits: thousands of digits
        raise ReplicationError(
            f"The {what} holds a number too long to be read (thousands of digits); shorten it."
        ) from None


def whole_number(value: object, high: int) -> int | None:
    """`value` (an int, or text of ASCII digits) as a whole number from 1 to `high`; None
    when it is not one (a bool, a fraction, a sign, other digits, out of range)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch("[0-9]{1,18}", value.strip()):
        number = int(value.strip())
    else:
        return None
    return number if 1 <= number <= high else None
