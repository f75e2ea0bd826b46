"""Regular expressions users give (a bulk action's mirror pattern, a Replicator `topic.regex`),
compiled by RE2: its matching time grows with the name's length only, whatever the pattern, so
no pattern can tie up the console (Python's `re` backtracks: `(x+x+)+y` over a 27-character
name took seconds, doubling with each character)."""

from __future__ import annotations

import re

import re2

from replication.core.errors import ReplicationError
from replication.core.text import escaped

MAX_PATTERN = 1000
_RE2 = re2.Options()
_RE2.log_errors = False


def compiled(pattern: str, what: str):
    """`pattern` compiled by RE2; refused in words, naming `what` it is ("topic.regex"), when it
    is too long, not a regex, or one RE2 cannot run (look-arounds, back-references)."""
    if len(pattern) > MAX_PATTERN:
        raise ReplicationError(
            f"{what} is {len(pattern)} characters long; at most {MAX_PATTERN} are taken. "
            "Nothing was changed."
        )
    try:
        return re2.compile(pattern, _RE2)
    except re2.error as exc:
        why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    why, shown = escaped(why[:200]), pattern[:100]
    try:  # only to say which it is: not a regex at all, or one RE2 cannot run
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        raise ReplicationError(
            f"{what} {shown!r} is not a regular expression ({why}). Correct it and try again. "
            "Nothing was changed."
        ) from None
    raise ReplicationError(
        f"{what} {shown!r} is a regular expression Isthmus cannot run ({why}): names are "
        "matched with RE2, which takes no look-arounds, back-references or possessive "
        "quantifiers (RE2 syntax), so that no pattern can stall the console. Write it without "
        "them. Nothing was changed."
    )
