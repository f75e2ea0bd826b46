"""CSV downloads whose cells stay inert in a spreadsheet: the audit trail's export and a
quarantine's. Control characters are escaped and nothing can start a formula, whatever the
stored text holds (an actor's name, a record's key)."""

from __future__ import annotations

import base64
import csv
import re
from collections.abc import Iterable

from django.http import StreamingHttpResponse

from replication.core.text import escaped

# A spreadsheet runs a cell that starts with one of these as a formula (tab and CR never
# reach it: they are escaped with the other control characters).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A spreadsheet that splits on `;` or `,` (its locale's separator), or a script splitting
# naively, makes a cell of what follows each one inside a cell too. So a formula starter at the
# start of a cell or after a separator, past any blanks and quotes, gets a `'` before it.
_FORMULA = re.compile(r"(^|[;,])([\s\"]*)([" + re.escape("".join(FORMULA_STARTS)) + "])")


class _Echo:
    """A file-like object csv.writer can write to that hands back what it was given."""

    def write(self, value: str) -> str:
        return value


def safe_cell(value) -> str:
    """A value as inert text for the CSV: control characters escaped, and no formula where a
    spreadsheet would start a cell (see `_FORMULA`)."""
    text = escaped("" if value is None else str(value))
    return _FORMULA.sub(r"\1\2'\3", text)


def csv_exact(
    text: str | None, encoding: str | None, *, within: bool = False
) -> tuple[str | None, str | None]:
    """A record's key, value or header name or value (`text` in `encoding`: "utf-8", "base64",
    or None for null) as a CSV gives it byte for byte, with its encoding: UTF-8 text that
    `safe_cell` would change (a formula start, a control character) in base64 instead, and a
    base64 cell that would start with `+` (a formula start too) in hex. `within` a cell of JSON,
    which starts with its `[`, base64 may start with anything."""
    if text is None or (encoding == "utf-8" and safe_cell(text) == text):
        return text, encoding
    data = text.encode() if encoding == "utf-8" else base64.b64decode(text)
    coded = base64.b64encode(data).decode("ascii")
    if within or not coded.startswith("+"):
        return coded, "base64"
    return data.hex(), "hex"


def csv_download(name: str, header: list[str], rows: Iterable[Iterable]) -> StreamingHttpResponse:
    """A CSV file to download as `name`, streamed: the header, then each row, every cell made
    inert by `safe_cell`."""

    def lines() -> Iterable[str]:
        # Every cell quoted: a separator or line break inside one cannot split it for a reader
        # that honours quotes, whatever its separator.
        writer = csv.writer(_Echo(), quoting=csv.QUOTE_ALL)
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow([safe_cell(value) for value in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
