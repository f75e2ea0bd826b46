"""A request holding a NUL character (U+0000) anywhere, in its path, its query or its body, is
refused at the door with a 400 that says so.

No name, config or text in Isthmus may hold one, and PostgreSQL stores none: without this, a
NUL in a link name looked up, a user page's path or a JSON string failed deep in the database
(a 500) where SQLite went along."""

from __future__ import annotations

import re

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from console.api.base import error_response
from console.api.middleware import ROOT

MESSAGE = (
    "The request holds a NUL character (U+0000), which no name, value or text in Isthmus may "
    "hold; send it without."
)
# \u0000 in a JSON string, not preceded by a backslash of its own (\\u0000 is a backslash and
# the text "u0000"). A raw NUL byte is no valid JSON: the parser refuses it.
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def _holds_nul(request: HttpRequest) -> bool:
    query = request.META.get("QUERY_STRING", "")
    if "\x00" in request.path or "%00" in query or "\x00" in query:
        return True
    content_type = request.content_type or ""
    if content_type not in ("application/json", "application/x-www-form-urlencoded"):
        return False  # multipart: Django's form fields refuse NUL characters themselves
    try:
        body = request.body
    except RequestDataTooBig:
        return False  # answered as too large further on
    if content_type == "application/json":
        return bool(_JSON_NUL.search(body))
    return b"%00" in body or b"\x00" in body


class RefuseNulCharacters:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not _holds_nul(request):
            return self.get_response(request)
        if request.path.startswith(ROOT):
            return error_response(400, MESSAGE)
        return HttpResponseBadRequest(MESSAGE, content_type="text/plain; charset=utf-8")
