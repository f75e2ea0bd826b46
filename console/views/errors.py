"""The pages Django shows when a request goes wrong before or outside a view's own answer: each
says what happened in an operator's words, never Python's or Django's."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.template import loader
from django.urls.exceptions import Resolver404
from django.views.decorators.csrf import requires_csrf_token


def _page(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    return render(request, "refused.html", {"title": title, "message": message}, status=status)


@requires_csrf_token
def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):
        return _page(request, 413, "Too large", "The request is too large; send less.")
    if isinstance(exception, TooManyFieldsSent):
        message = "The request has more fields than any page of the console sends."
    elif isinstance(exception, MultiPartParserError):
        message = "The request's multipart body could not be read."
    else:  # a host this console does not serve, a bad header or cookie
        message = "The request is malformed (a bad header, cookie or host)."
    return _page(request, 400, "Bad request", message)


@requires_csrf_token
def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    # Our own Http404s name what was not found ("There is no user named 'x'."); the resolver's
    # (no route matched) carry only Django's internals.
    said = exception.args[0] if exception.args else None
    if isinstance(exception, Resolver404) or not isinstance(said, str) or not said:
        said = f"The console has no page at {request.path}."
    return _page(request, 404, "Not found", said)


def server_error(request: HttpRequest) -> HttpResponse:
    # No context processors and no base template: what failed may be one of them.
    return HttpResponse(loader.get_template("500.html").render(), status=500)
