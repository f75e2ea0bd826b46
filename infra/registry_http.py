"""The one door of the schema registry client (`schema_registry.SchemaRegistry`) to a
registry's HTTP: each request bounded whole by a deadline (connecting, the headers and the
body, however the answer is trickled) and in size, redirects not followed, the environment's
proxy and CA bundle read once, HTTP basic built from UTF-8. Every failure is a
`SchemaRegistryError` whose words say what went wrong and what to do, a registry's own words
repeated only on one line and shortened; Confluent's error code is kept for callers that decide
on it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.response import HTTPResponse

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

# The most an answer may hold: far beyond a page of a thousand schemas, and short of what would
# fill a worker's memory.
MAX_ANSWER = 64 * 1024 * 1024
# How much of a registry's own error message is repeated in ours (it ends up on pages).
MAX_SAID = 200
# Control and bidirectional characters: in a registry's words they would act on a terminal or
# reorder what a page shows.
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class SchemaRegistryError(RuntimeError):
    def __init__(self, message: str, code: int | None = None, status: int | None = None):
        super().__init__(message)
        self.code, self.status = code, status


class RegistryHttp:
    """A registry at `url`. `timeout` bounds each request whole (connecting, the headers and
    the body), not each read: a registry that trickles its answer holds its caller no longer.
    Redirects are not followed: a registry answers at its own URL, and another address's
    answers (or its credentials) are not the registry's."""

    def __init__(
        self,
        url: str,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        for scheme in ("http://", "https://"):
            self.session.mount(scheme, _WatchedAdapter())
        self.session.headers.update({"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        # The environment's proxy and CA bundle, read once: requests reads them again for every
        # request otherwise (a quarter of a 1,000-subject sync run's CPU).
        self.session.trust_env = False
        self.session.proxies = requests.utils.get_environ_proxies(self.url)
        self.session.verify = (
            os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        )
        if username is not None:
            # HTTP basic built here from UTF-8 (RFC 7617): requests encodes it as Latin-1, and
            # fails on any other username or password.
            pair = f"{username}:{password or ''}".encode()
            self.session.headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()

    def _call(
        self,
        method: str,
        path: str,
        doing: str,
        body: dict[str, Any] | None = None,
        **params: str | int | bool | None,
    ) -> Any:
        """The registry's answer (JSON; None for none), or the refusal raised."""
        query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
        query = {k: v for k, v in query.items() if v is not None}
        watch = _Watch(self.timeout)
        try:
            try:
                with watch.watching():
                    resp = self.session.request(
                        method,
                        self.url + path,
                        params=query,
                        data=None if body is None else json.dumps(body),
                        timeout=self.timeout,
                        allow_redirects=False,
                        stream=True,
                    )
                with resp:
                    content = self._content(resp, doing, watch)
            except requests.RequestException as exc:
                if isinstance(exc, requests.Timeout) or watch.passed():
                    raise self._late(doing) from exc
                raise SchemaRegistryError(
                    f"Could not {doing} at {self.url}: it cannot be reached. Check that the "
                    "registry is running and the URL is right."
                ) from exc
        finally:
            watch.stop()
        if 300 <= resp.status_code < 400:
            raise SchemaRegistryError(
                f"Could not {doing} at {self.url}: the registry answered with a redirect (HTTP "
                f"{resp.status_code}), and redirects are not followed. Give the registry's own "
                "URL, where it answers itself.",
                status=resp.status_code,
            )
        if resp.status_code < 300:
            return _json(content, doing, self.url) if content else None
        raise _refusal(resp.status_code, content, doing, self.url)

    def _content(self, resp: requests.Response, doing: str, watch: _Watch) -> bytes:
        """The answer's body, read by the deadline and no larger than MAX_ANSWER."""
        declared = resp.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > MAX_ANSWER:
            raise self._too_large(doing)
        chunks, size = [], 0
        for chunk in resp.iter_content(64 * 1024):
            size += len(chunk)
            if size > MAX_ANSWER:
                raise self._too_large(doing)
            if watch.passed():
                raise self._late(doing)
            chunks.append(chunk)
        if watch.passed():  # a socket shut at the deadline reads as the end of an unsized body
            raise self._late(doing)
        return b"".join(chunks)

    def _late(self, doing: str) -> SchemaRegistryError:
        return SchemaRegistryError(
            f"Could not {doing} at {self.url}: it did not answer within {self.timeout:g} s. "
            "Check that the registry is running and the URL is right."
        )

    def _too_large(self, doing: str) -> SchemaRegistryError:
        return SchemaRegistryError(
            f"Could not {doing} at {self.url}: its answer is larger than "
            f"{MAX_ANSWER // (1024 * 1024)} MiB, far more than a schema registry sends. Check "
            "that the URL points at a schema registry (Confluent's REST API)."
        )


# --- the deadline of a whole request --------------------------------------------------------
# requests' timeout bounds each read from the socket, so an answer trickled a byte at a time
# never ends. A request's connections are noted while it is made (a thread's own), and a timer
# shuts their sockets at the deadline: whatever read is waiting then fails at once.

_current = threading.local()


class _Watch:
    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds
        self.expired = False
        self._connections: list[HTTPConnection] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        _current.watch = self
        try:
            yield
        finally:
            _current.watch = None

    def passed(self) -> bool:
        return self.expired or time.monotonic() >= self.deadline

    def note(self, connection: HTTPConnection) -> None:
        with self._lock:
            if connection not in self._connections:
                self._connections.append(connection)
            if connection.sock is not None and connection.sock not in self._sockets:
                self._sockets.append(connection.sock)
            if self.expired:  # the deadline passed before this connection was made
                raise OSError("the request's deadline passed")

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            # A connection closing once the answer is read hands its socket to the response
            # (connection.sock is None then): the one noted before is shut too.
            found = [c.sock for c in self._connections if c.sock is not None] + self._sockets
            for sock in found:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self._timer.cancel()


def _note(connection: HTTPConnection) -> None:
    watch = getattr(_current, "watch", None)
    if watch is not None:
        watch.note(connection)


class _Watched(HTTPConnection):
    """A connection noted by the request it serves: when it connects (TLS's handshake comes
    before the request), for each request (a pooled connection connects only once) and as
    the answer comes."""

    def connect(self) -> None:
        _note(self)
        super().connect()

    def request(self, *args: Any, **kwargs: Any) -> None:
        _note(self)
        super().request(*args, **kwargs)

    # urllib3 overrides http.client's with an answer of its own type, so must this.
    def getresponse(self) -> HTTPResponse:  # type: ignore[override]
        _note(self)  # its socket now, which the response may take over
        return super().getresponse()


class _WatchedHTTPConnection(_Watched):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _WatchedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        # A SOCKS proxy's pools make connections of their own: there the body alone is bound
        # by the deadline (read against the clock), the headers by each read's timeout.
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _POOLS
        return manager


def _json(content: bytes, doing: str, url: str) -> Any:
    try:
        return json.loads(content)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past any schema
        raise not_a_registry(doing, url) from exc


def not_a_registry(doing: str, url: str) -> SchemaRegistryError:
    return SchemaRegistryError(
        f"Could not {doing} at {url}: the answer is not Schema Registry JSON. Check that "
        "the URL points at a schema registry (Confluent's REST API)."
    )


def _refusal(status: int, content: bytes, doing: str, url: str) -> SchemaRegistryError:
    try:
        detail = json.loads(content) if content else {}
    except (ValueError, RecursionError):
        detail = {}
    code = detail.get("error_code") if isinstance(detail, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        code = None
    said = detail.get("message") if isinstance(detail, dict) else None
    said = shown(said) if isinstance(said, str) else ""
    if status in (401, 403):
        words = (
            "the registry refused the credentials. Check the username and password (or API "
            "key) registered for it"
        )
    elif said:
        words = f"the registry said: {said.rstrip('.')}"
    else:
        words = f"the registry answered HTTP {status}"
    return SchemaRegistryError(f"Could not {doing} at {url}: {words}.", code, status)


def shown(said: str) -> str:
    """A registry's own words as we repeat them: on one line, without control or
    bidirectional characters, at most MAX_SAID characters."""
    said = " ".join(_UNSHOWN.sub(" ", said).split())
    return said if len(said) <= MAX_SAID else said[: MAX_SAID - 1].rstrip() + "…"
