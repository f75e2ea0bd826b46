"""What every JSON API call goes through: authentication (an API token as a bearer token or as
the password of HTTP Basic, or the browser session with its CSRF check), the root it came in by
(/kafka/v3, or a cluster's own /kafka/<name>/v3), the access policy, and errors in the Kafka
REST v3 envelope `{"error_code": ..., "message": ...}`."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from functools import wraps
from typing import NoReturn, cast

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from console.access import CHOOSING_PASSWORD, POLICY, can
from console.api.schemas import Error, respond
from replication.core import text
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.governance.tokens import authenticate, is_token
from replication.models import ApiToken, KafkaCluster

# HTTP status -> the v3 envelope's error_code (40002 is Kafka REST's "invalid request").
ERROR_CODES = {
    400: 40002,
    401: 40101,
    403: 40301,
    404: 40401,
    405: 40501,
    409: 40901,
    413: 41301,
    415: 41501,
    500: 50001,
    503: 50301,
}


CHALLENGE = 'Bearer realm="isthmus", Basic realm="isthmus"'


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def error_response(status: int, message: str) -> JsonResponse:
    response = respond(
        Error(error_code=ERROR_CODES.get(status, status * 100), message=message), status
    )
    if status == 401:
        response["WWW-Authenticate"] = CHALLENGE
    return response


def no_content() -> HttpResponse:
    return HttpResponse(status=204)


class ApiRequest(HttpRequest):
    """A request as the API sees it once `endpoint` let it in: the API token it came with (None
    for a browser session) and the cluster its root serves (None under /kafka/v3)."""

    api_token: ApiToken | None
    cluster_root: KafkaCluster | None


class _CsrfCheck(CsrfViewMiddleware):
    """Django's own CSRF check, reporting why it refused instead of answering."""

    def _reject(self, request, reason):
        return reason


def _checked_view(request: HttpRequest) -> HttpResponse:
    """What the CSRF check is asked about: a view that is not exempt."""
    return HttpResponse()


_CSRF = _CsrfCheck(_checked_view)


def _csrf_failure(request: HttpRequest) -> str | None:
    """Why a session-authenticated call fails the CSRF check, if it does."""
    _CSRF.process_request(request)
    return cast("str | None", _CSRF.process_view(request, _checked_view, (), {}))  # (_reject)


def _basic_credentials(value: str) -> tuple[str, str]:
    try:
        username, colon, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        colon = ""
    if not colon:
        raise ApiError(401, "The Basic credentials are not base64 of 'user name:API token'.")
    return username, password


def _refuse_credentials(request: HttpRequest, claimed: str, message: str) -> NoReturn:
    """A call with credentials that do not hold: audited (by whom it claimed to be), then 401."""
    audit.refused(
        audit.Actor(
            name=f"{claimed} (not authenticated)"[:150],
            address=request.META.get("REMOTE_ADDR"),
            user_agent=request.META.get("HTTP_USER_AGENT", "")[:400],
        ),
        "api.authenticate",
        request.path,
        message,
    )
    raise ApiError(401, message)


def _authenticate(request: ApiRequest) -> None:
    """A bearer token, Basic with the user's name and one of their API tokens as the password
    (as Confluent's tools and `curl -u` send), or the browser session with its CSRF check."""
    scheme, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    scheme, credentials = scheme.lower(), credentials.strip()
    if scheme in ("bearer", "basic"):
        username, secret = (
            _basic_credentials(credentials) if scheme == "basic" else ("", credentials)
        )
        if scheme == "basic" and not is_token(secret) and request.user.is_authenticated:
            return _check_session(request)  # a proxy's own Basic auth in front of the console
        token = authenticate(secret)
        if token is None or (scheme == "basic" and token.user.get_username() != username):
            _refuse_credentials(
                request,
                username or "a bearer token",
                "The API token is not valid: it was revoked, mistyped, is another user's, or "
                "its user is disabled. With Basic, send your user name and one of your API "
                "tokens (never your account password). Make a token on your account page.",
            )
        request.user, request.api_token = token.user, token
        return
    _check_session(request)


def _check_session(request: HttpRequest) -> None:
    if not request.user.is_authenticated:
        raise ApiError(
            401,
            "Authentication required: send an API token as 'Authorization: Bearer <token>', "
            "or as the password of HTTP Basic with your user name (make one on your account "
            "page in the console).",
        )
    # A browser session: the same CSRF protection as the console's forms.
    reason = _csrf_failure(request)
    if reason:
        raise ApiError(403, f"CSRF verification failed: {reason}. Send the X-CSRFToken header.")
    if request.session.get(CHOOSING_PASSWORD):
        # The console holds this session on the password page; the API must hold it too.
        message = (
            "You signed in with a one-time password: choose your own password in the console "
            "first (/account/password/). Until then this session may not use the API."
        )
        if request.method != "GET":
            audit.refused(
                audit.Actor.from_request(request), "api.authenticate", request.path, message
            )
        raise ApiError(403, message)


def _enter_root(request: ApiRequest, kwargs: dict) -> None:
    """Under a cluster's own root (/kafka/<name>/v3/…), only that cluster is served."""
    request.cluster_root = None
    name = kwargs.pop("cluster_root", None)
    if name is None:
        return
    request.cluster_root = KafkaCluster.objects.filter(name=name).first()
    if request.cluster_root is None:
        raise ApiError(
            404,
            f"No registered cluster is named {name!r}: the API roots are /kafka/v3 and "
            "/kafka/<registered cluster name>/v3.",
        )
    if kwargs.get("cluster_id", request.cluster_root.cluster_id) != request.cluster_root.cluster_id:
        raise ApiError(
            404,
            f"This root serves cluster {name} ({request.cluster_root.cluster_id}) only; "
            "use /kafka/v3 for the others.",
        )


def _refuse_repeated_parameters(request: HttpRequest) -> None:
    """A query parameter given twice (`validate_only=true&validate_only=false`) is refused:
    which one counts would be a guess, and a dry run must never become the real call."""
    repeated = sorted(name for name, values in request.GET.lists() if len(values) > 1)
    if repeated:
        raise ApiError(
            400,
            f"Query parameter {', '.join(repeated)} is given more than once; give each once "
            "(lists take commas, e.g. state=PENDING,APPROVED). Nothing was changed.",
        )


def root_clusters(request: ApiRequest) -> QuerySet[KafkaCluster]:
    """The clusters the request's root serves: its own cluster, or all of them."""
    if request.cluster_root is not None:
        return KafkaCluster.objects.filter(pk=request.cluster_root.pk)
    return KafkaCluster.objects.order_by("name")


def endpoint(**actions: str) -> Callable:
    """An API view whose HTTP methods are allowed by these access-policy actions,
    e.g. `@endpoint(GET="console.view", POST="link.manage")`."""
    for action in actions.values():
        if action not in POLICY:
            raise KeyError(f"Unknown action {action!r}; add it to console.access.POLICY.")

    def decorate(view):
        @csrf_exempt  # checked in _authenticate for session calls; tokens need none
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            try:
                action = actions.get(request.method)
                if action is None:
                    raise ApiError(
                        405,
                        f"{request.method} is not supported here; use "
                        f"{' or '.join(sorted(actions))}.",
                    )
                _authenticate(request)
                _refuse_repeated_parameters(request)
                _enter_root(request, kwargs)
                if not can(request.user, action):
                    message = f"Your role does not allow {action} ({request.user.get_username()})."
                    if request.method != "GET":
                        audit.refused(
                            audit.Actor.from_request(request), action, request.path, message
                        )
                    raise ApiError(403, message)
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc.status, str(exc))
            except ReplicationError as exc:
                return error_response(exc.status, str(exc))

        wrapper.access_actions = dict(actions)
        return wrapper

    return decorate


def json_body(request: HttpRequest) -> dict:
    """The request's JSON object (an empty body counts as `{}`)."""
    try:
        raw = request.body
    except RequestDataTooBig as exc:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise ApiError(413, f"The request body is larger than {limit} bytes; send less.") from exc
    if not raw:
        return {}
    content_type = request.content_type or ""
    if content_type != "application/json":
        raise ApiError(415, f"Send the body as application/json, not {content_type or 'nothing'}.")
    try:
        body = text.json_document(raw, "request body")
    except ReplicationError as exc:
        raise ApiError(400, str(exc)) from None
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    return body


def field(body: dict, name: str, kind: type, *, required: bool = False, default=None):
    """`body[name]`, which must be of `kind` when present."""
    if name not in body or body[name] is None:
        if required:
            raise ApiError(400, f"The request body needs {name!r}.")
        return default
    value = body[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ApiError(400, f"{name!r} must be a {_KIND_NAMES[kind]}, not {json.dumps(value)}.")
    return value


_KIND_NAMES = {str: "string", int: "number", list: "list", dict: "object", bool: "boolean"}


def name_values(body: dict, name: str = "configs") -> dict[str, str]:
    """A v3 `[{"name": ..., "value": ...}]` list as a dict."""
    result: dict[str, str] = {}
    for i, entry in enumerate(field(body, name, list, default=[])):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ApiError(
                400, f'{name}[{i}] must be an object like {{"name": "k", "value": "v"}}.'
            )
        value = entry.get("value")
        if not isinstance(value, str):
            raise ApiError(400, f"{name}[{i}] ({entry['name']}) needs a string value.")
        result[entry["name"]] = value
    return result


def flag(request: HttpRequest, name: str, default: bool = False) -> bool:
    """A boolean query parameter: true or false."""
    value = request.GET.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ApiError(400, f"Query parameter {name} must be true or false, not {value!r}.")


def cluster(cluster_id: str) -> KafkaCluster:
    found = KafkaCluster.objects.filter(cluster_id=cluster_id).first()
    if found is None:
        raise ApiError(
            404,
            f"No registered cluster has id {cluster_id!r}. GET /kafka/v3/clusters lists them.",
        )
    return found


def api_url(request: HttpRequest, path: str) -> str:
    """`path` (under /kafka/v3/) as a URL under the root the request came in by."""
    root = getattr(request, "cluster_root", None)
    if root is not None:
        path = path.replace("/kafka/v3/", f"/kafka/{root.name}/v3/", 1)
    return request.build_absolute_uri(path)


def self_url(request: HttpRequest, path: str) -> dict:
    """The `metadata` of a resource at `path`."""
    return {"self": api_url(request, path)}
