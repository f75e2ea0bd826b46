"""A stand-in for a third-party server registered as a schema registry, on 127.0.0.1: it
answers as a test tells it (a registry's JSON, a redirect, an answer trickled a byte at a time)
and notes what it was asked. Not Kafka, nor the stack's registries: what a registry's owner
could make it do."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Asked:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Server:
    url: str
    asked: list[Asked] = field(default_factory=list)


Answer = Callable[[BaseHTTPRequestHandler], None]


def registry(subjects=("orders-value",), mode="READWRITE") -> Answer:
    """Answers as a schema registry does: its subjects and its mode."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        # By the path's end: what a URL with more in its path (a context, say) asks there.
        path = handler.path.split("?")[0]
        if path.endswith("/subjects"):
            send_json(handler, 200, list(subjects))
        elif path.endswith("/mode"):
            send_json(handler, 200, {"mode": mode})
        else:
            send_json(handler, 404, {"error_code": 40401, "message": "Not found"})

    return answer


def send_json(handler: BaseHTTPRequestHandler, status: int, body) -> None:
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def redirect(to: str) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", to + handler.path)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


def trickle(every_s: float = 0.5, for_s: float = 20.0, headers: bool = False) -> Answer:
    """One byte every `every_s` seconds for `for_s` seconds: of the body, or (`headers`) of
    the headers, so no single read ever waits long."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if headers:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        else:
            handler.send_response(200)
            handler.send_header("Content-Length", str(int(for_s / every_s) + 10))
            handler.end_headers()
        handler.wfile.flush()
        ends = time.monotonic() + for_s
        while time.monotonic() < ends:
            handler.wfile.write(b"X" if headers else b" ")
            handler.wfile.flush()
            time.sleep(every_s)

    return answer


@contextmanager
def serve(answer: Answer) -> Iterator[Server]:
    """A server on a free port of 127.0.0.1 answering every request with `answer`."""
    server_info = Server("")

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            server_info.asked.append(Asked(self.command, self.path, dict(self.headers.items())))
            with contextlib.suppress(OSError):  # the client hung up: what a deadline does
                answer(self)

        do_GET = do_PUT = do_POST = do_DELETE = _any

        def log_message(self, *args) -> None:
            pass

    class Quiet(ThreadingHTTPServer):
        daemon_threads = True
        block_on_close = False

        def handle_error(self, request, client_address) -> None:
            pass

    server = Quiet(("127.0.0.1", 0), Handler)
    server_info.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server_info
    finally:
        server.shutdown()
        server.server_close()
