"""The console's web server: Waitress, started the same way by `make demo`, the Docker image and
the compose file (`python -m console.web_server --listen 127.0.0.1:8000`).

Why Waitress and not gunicorn's sync workers: a sync worker's thread reads a request from the
socket itself, so twenty clients that send a header line every few seconds held all eight
threads and the console stopped answering everyone (a slowloris). Waitress reads every
connection in one asynchronous loop and hands a request to a worker thread only once it has
arrived whole, so a slow client costs a socket, not a thread. The limits below bound what slow
or idle clients can hold (docs/operations.md says what protects the console)."""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Callable, Iterable

THREADS = 8  # requests worked on at once (what gunicorn's 2 workers x 4 threads gave)
CONNECTION_LIMIT = 1000  # open sockets, slow ones included; more wait to be accepted
CHANNEL_TIMEOUT = 30  # seconds a connection may stay silent before it is closed
# Well above Django's own limit (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB), so Django answers an
# oversized form in its words, but bounded: Waitress buffers a body before a thread sees it.
MAX_REQUEST_BODY = 16 * 1024 * 1024

log = logging.getLogger("console.access")


def with_access_log(app: Callable) -> Callable:
    """One line a request: method, path, status and time taken."""

    def logged(environ: dict, start_response: Callable) -> Iterable[bytes]:
        began = time.monotonic()
        status = ["-"]

        def start(code: str, headers: list, exc_info=None):
            status[0] = code.split(" ", 1)[0]
            return start_response(code, headers, exc_info)

        try:
            return app(environ, start)
        finally:
            path = environ.get("PATH_INFO", "")
            query = environ.get("QUERY_STRING", "")
            log.info(
                "%s %s %s %s %d ms",
                environ.get("REMOTE_ADDR", "-"),
                environ.get("REQUEST_METHOD", "-"),
                f"{path}?{query}" if query else path,
                status[0],
                round((time.monotonic() - began) * 1000),
            )

    return logged


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--listen", default="127.0.0.1:8000", help="host:port (default %(default)s)"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

    from waitress import serve

    from console.wsgi import application

    serve(
        with_access_log(application),
        listen=args.listen,
        threads=THREADS,
        connection_limit=CONNECTION_LIMIT,
        channel_timeout=CHANNEL_TIMEOUT,
        max_request_body_size=MAX_REQUEST_BODY,
        ident="",  # no server name and version in every answer
    )


if __name__ == "__main__":
    main()
