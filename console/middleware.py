"""What the door refuses before any view reads a request.

A request holding a NUL character (U+0000) anywhere, in its path, its query or its body, is
refused with a 400 that says so. No name, config or text in Isthmus may hold one, and
PostgreSQL stores none: without this, a NUL in a link name looked up, a user page's path or a
JSON string failed deep in the database (a 500) where SQLite went along.

A POST to the console's pages whose body is no form they can read is refused with a page that
says why (RefuseUnreadableForms): without this, a view read a JSON body as an empty form and
acted on it (a pause, a new password), or Django's parser failed with a bare "Bad Request".
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render

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


# The content types an HTML form (and HTMX, which sends forms) posts; the console's pages take
# nothing else.
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _megabytes(size: int) -> str:
    return f"{size / 1024 / 1024:.1f}".removesuffix(".0")


def _unreadable(request: HttpRequest) -> tuple[int, str] | None:
    """Why the console's pages cannot read this POST's body, as (status, message); None when
    they can. The form is parsed here, once, so a view never meets a body it cannot read."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        body = request.body  # refused over DATA_UPLOAD_MAX_MEMORY_SIZE, whatever its type
    except RequestDataTooBig:
        return 413, f"The form is too large: at most {_megabytes(limit)} MB. Send less."
    content_type = request.content_type or ""
    if content_type not in FORM_TYPES:
        if not body and not content_type:
            return None  # a bare POST (curl -X POST): nothing to misread
        return 415, (
            f"The console's pages take forms ({' or '.join(FORM_TYPES)}), not "
            f"{content_type or 'a body without a Content-Type'}. For JSON, use the API under "
            "/kafka/v3/ (its paths are listed in /kafka/v3/openapi.json)."
        )
    problem = _body_problem(request, body, content_type)
    if problem:
        return problem
    try:
        posted, files = request.POST, request.FILES
    except TooManyFieldsSent:
        return 400, (
            f"The form has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields; no page "
            "of the console sends that many. Send the page's own form."
        )
    except (MultiPartParserError, SuspiciousOperation):
        return 400, _CUT_OFF
    if files:
        return 400, "The console's forms take no files; paste the text into the form's fields."
    if any("\ufffd" in value for values in posted.lists() for value in values[1]):
        return _NOT_UTF8  # what Django made of undecodable bytes in a multipart field
    return None


_NOT_UTF8 = (400, "The form holds bytes that are not UTF-8 text; send it as UTF-8.")


def _body_problem(request: HttpRequest, body: bytes, content_type: str) -> tuple[int, str] | None:
    """What Django would misread in a form's raw body: bytes that are not text in its
    charset (urlencoded), a multipart body cut off before its closing boundary."""
    if content_type == FORM_TYPES[0]:
        encoding = request.encoding or settings.DEFAULT_CHARSET  # a form's charset, if known
        try:
            # Strictly: Django would turn undecodable bytes into U+FFFD and go on.
            text = body.decode(encoding)
            parse_qsl(text, keep_blank_values=True, encoding=encoding, errors="strict")
        except UnicodeDecodeError:
            return _NOT_UTF8
        except ValueError:
            pass  # too many fields: Django's own parse says so
        return None
    boundary = (request.content_params or {}).get("boundary", "").encode("latin-1", "replace")
    # Django reads a body cut off before its closing boundary as far as it goes.
    if boundary and not body.rstrip(b"\r\n").endswith(b"--" + boundary + b"--"):
        return 400, _CUT_OFF
    return None


_CUT_OFF = (
    "The form's multipart body could not be read (no boundary, a wrong one, or a body cut off "
    "before its end). Send the page's own form again."
)


class RefuseUnreadableForms:
    """A POST to the console's pages whose body is no form they can read (JSON, text, a file,
    bytes that are not UTF-8, a cut-off multipart body, too large, too many fields) is refused
    here with a page that says why, before any view or CSRF check reads it. The API (/kafka/)
    answers such bodies itself, in its envelope."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and not request.path.startswith(ROOT):
            refused = _unreadable(request)
            if refused is not None:
                status, message = refused
                return render(request, "refused.html", {"message": message}, status=status)
        return self.get_response(request)


# The console's own scripts are files under /static/ (no inline script or handler, no eval);
# inline style attributes stay allowed (a progress bar's width), which run no code.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)


class SecurityHeaders:
    """First of all the middleware, so every answer carries these, the refusals of the
    middleware below it included: a Content-Security-Policy and X-Frame-Options (the
    clickjacking middleware answers only what passes through it)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Frame-Options", settings.X_FRAME_OPTIONS)
        return response
