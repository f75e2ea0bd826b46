"""Whatever goes wrong under the API roots (/kafka/…) answers in the v3 error envelope, never
as an HTML page: a path no route matches, and an unexpected failure."""

from __future__ import annotations

import logging

from console.api.base import error_response

log = logging.getLogger(__name__)
ROOT = "/kafka/"


class ApiErrors:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            request.path.startswith(ROOT)
            and response.status_code == 404
            and response.get("Content-Type") != "application/json"
        ):
            return error_response(
                404,
                f"No API path answers {request.method} {request.path}. The paths are listed in "
                "/kafka/v3/openapi.json.",
            )
        return response

    def process_exception(self, request, exception):
        if not request.path.startswith(ROOT):
            return None
        log.exception("The API failed on %s %s", request.method, request.path)
        return error_response(
            500,
            "The console failed while answering; nothing more is known here. The error is in "
            "the console's log: ask an administrator to look there.",
        )
