"""Text people type (reasons, names, descriptions) checked at the door: no control characters,
which would act on an approver's terminal (ESC sequences retitle and clear it) or hide what a
line says (bidirectional overrides)."""

from __future__ import annotations

import unicodedata

from .errors import ReplicationError

# Bidirectional controls reorder what a reader sees ("Trojan Source"); the rest of category
# Cf (zero-width joiners in emoji, say) is harmless.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def _is_control(c: str) -> bool:
    return unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escaped(text: str) -> str:
    """`text` with each control character shown as an escape, Python-style (`\\x1b`, `\\n`,
    `\\u202e`): inert wherever it is shown (a terminal, a spreadsheet). Older data may still
    hold what the door now refuses."""
    return "".join(
        (_SHORT.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"))
        if _is_control(c)
        else c
        for c in text
    )


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
