"""Whatever goes wrong under the API roots (/kafka/…) answers in the v3 error envelope, never
as an HTML page: a path no route matches, a request Django itself refuses (too many fields, a
host it does not serve), and an unexpected failure."""

from __future__ import annotations

import logging

from django.core.exceptions import DisallowedHost, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.log import log_response

from console.api.base import error_response

log = logging.getLogger(__name__)
ROOT = "/kafka/"

# What a refusal by Django's own machinery (not by an API view) means, by status.
_REFUSED = {
    400: "The request is malformed: too many fields, a bad header or a host this console does "
    "not serve.",
    403: "The request was refused (a CSRF check, or a host this console does not serve).",
    405: "This method is not supported here; the paths and their methods are listed in "
    "/kafka/v3/openapi.json.",
    413: "The request is too large; send less.",
}


class RefuseUnservedHostsInEnvelope:
    """A call under the API roots for a host this console does not serve (not in ALLOWED_HOSTS)
    is refused here, first, in the envelope: further on, Django raises DisallowedHost out of
    the first `get_host()` and answers with its HTML page, around every other middleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(ROOT):
            try:
                request.get_host()
            except DisallowedHost as exc:
                response = error_response(
                    400,
                    "This console does not serve the host this call was sent to (the Host "
                    "header); call it by one of the names it serves (its ALLOWED_HOSTS).",
                )
                # One line, in the logger Django uses for it; marks the response as logged.
                log_response(
                    str(exc),
                    request=request,
                    response=response,
                    logger=logging.getLogger("django.security.DisallowedHost"),
                )
                return response
        return self.get_response(request)


class ApiErrors:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        status = response.status_code
        if (
            not request.path.startswith(ROOT)
            or status < 400
            or response.get("Content-Type") == "application/json"
        ):
            return response
        if status == 404:
            return error_response(
                404,
                f"No API path answers {request.method} {request.path}. The paths are listed in "
                "/kafka/v3/openapi.json.",
            )
        return error_response(status, _REFUSED.get(status, "The request was refused."))

    def process_exception(self, request, exception):
        if not request.path.startswith(ROOT):
            return None
        if isinstance(exception, SuspiciousOperation | PermissionDenied | Http404):
            return None  # Django answers these as 4xx; __call__ puts them in the envelope
        log.exception("The API failed on %s %s", request.method, request.path)
        return error_response(
            500,
            "The console failed while answering; nothing more is known here. The error is in "
            "the console's log: ask an administrator to look there.",
        )
