"""What the command-line tools share: finding the console and the token, calling the JSON API,
naming the destination cluster by --bootstrap-server, and parsing Kafka-style options.

The tools never touch the database: every change goes through the console's API, and so
through its access policy and audit trail.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from infra import kafka_admin
from infra.client_config import librdkafka_config
from infra.kafka_admin import KafkaAdmin, KafkaAdminError

# librdkafka logs every failed connection attempt (many a second while a cluster is down); the
# tools report one clear error instead, so its log lines go nowhere.
kafka_admin.logger.addHandler(logging.NullHandler())
kafka_admin.logger.propagate = False

DEFAULT_CONFIG = Path.home() / ".config" / "isthmus" / "cli.properties"
URL_KEY, TOKEN_KEY = "isthmus.url", "isthmus.token"


class CliError(Exception):
    """Something the user must fix; printed to stderr, exit status 1."""


def run(main: Callable[[list[str] | None], int]) -> Callable[[list[str] | None], int]:
    """Wrap a tool's main: errors go to stderr with a non-zero exit status."""

    def wrapped(argv: list[str] | None = None) -> int:
        try:
            return main(argv)
        except CliError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130

    return wrapped


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument(
        "--bootstrap-server",
        required=True,
        help="the destination cluster (host:port,...), as in Kafka's own tools",
    )
    p.add_argument(
        "--command-config",
        help="properties file: Kafka client settings for --bootstrap-server, and "
        f"{URL_KEY} / {TOKEN_KEY} for the Isthmus console",
    )
    return p


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file: key=value (or key: value) lines, # and ! comments."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Cannot read {path}: {exc.strerror}.") from exc
    except UnicodeDecodeError as exc:
        raise CliError(
            f"{path} is not a text file of key=value lines (it is not UTF-8 text)."
        ) from exc
    props = {}
    # A line ending in a backslash continues on the next (long sasl.jaas.config values).
    text = re.sub(r"\\\n[ \t]*", "", text)
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if not match:
            raise CliError(f"{path} line {number} is not 'key=value'.")
        props[match.group(1)] = match.group(2)
    return props


def split_configs(text: str) -> dict[str, str]:
    """`k=v,k2=v2`, where a value holding commas is written in brackets: `k=[a,b]`."""
    configs = {}
    for item in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", text):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CliError(f"{item!r} is not name=value. Write configs as k1=v1,k2=v2.")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[name.strip()] = value
    return configs


def configs_from(file: str | None, text: str | None) -> dict[str, str]:
    """Configs from a properties file and a `k=v,...` option; the option wins."""
    configs = read_properties(file) if file else {}
    configs.update(split_configs(text) if text else {})
    return configs


# A link or topic name as Kafka allows names, and the fixed words of the API's paths.
_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_PATH_WORDS = re.compile(r"configs(:alter)?|mirrors(:[a-z]+)?")


def names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


class Console:
    """The Isthmus console's JSON API, called with a bearer token."""

    def __init__(self, url: str, token: str):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: dict | None = None, **query) -> dict | None:
        query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items()}
        url = f"{self.url}/kafka/v3{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        # The URL is the console's, http(s) as checked in console_settings.
        request = urllib.request.Request(  # noqa: S310
            url,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise CliError(_error_message(exc)) from exc
        except urllib.error.URLError as exc:
            raise CliError(
                f"Cannot reach the Isthmus console at {self.url}: {exc.reason}. "
                f"Is it running? Check {URL_KEY} / ISTHMUS_URL."
            ) from exc
        return json.loads(payload) if payload else None


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read())["message"]
    except (ValueError, KeyError, TypeError):
        return f"The console answered HTTP {exc.code} {exc.reason}."


def console_settings(command_config: dict[str, str]) -> tuple[str, str]:
    """The console URL and token: from --command-config, else ISTHMUS_URL / ISTHMUS_TOKEN,
    else the file named by ISTHMUS_CONFIG (default ~/.config/isthmus/cli.properties)."""
    file = Path(os.environ.get("ISTHMUS_CONFIG") or DEFAULT_CONFIG)
    stored = read_properties(file) if file.is_file() else {}
    url = command_config.get(URL_KEY) or os.environ.get("ISTHMUS_URL") or stored.get(URL_KEY)
    token = (
        command_config.get(TOKEN_KEY) or os.environ.get("ISTHMUS_TOKEN") or stored.get(TOKEN_KEY)
    )
    if url and not url.startswith(("http://", "https://")):
        raise CliError(f"The console URL must start with http:// or https://, not {url!r}.")
    if not url or not token:
        raise CliError(
            f"No Isthmus console {'URL' if not url else 'token'} given. Set {URL_KEY} and "
            f"{TOKEN_KEY} in the --command-config file, or ISTHMUS_URL and ISTHMUS_TOKEN in the "
            f"environment, or write them to {file}. Make a token on your account page in the "
            "console; 'make demo' writes var/cli.properties for its admin."
        )
    return url, token


class Session:
    """One tool run: the console, and the destination cluster named by --bootstrap-server,
    which is asked for its id (as Kafka's tools would connect to it)."""

    def __init__(self, args: argparse.Namespace):
        command_config = read_properties(args.command_config) if args.command_config else {}
        self.console = Console(*console_settings(command_config))
        kafka_settings = {k: v for k, v in command_config.items() if not k.startswith("isthmus.")}
        try:
            client = librdkafka_config(
                {**kafka_settings, "bootstrap.servers": args.bootstrap_server}
            )
        except ValueError as exc:
            raise CliError(f"The Kafka settings of --command-config are not usable: {exc}") from exc
        try:
            self.admin = KafkaAdmin(client, timeout=10)
            self.cluster_id = self.admin.describe_cluster().cluster_id
        except KafkaAdminError as exc:
            raise CliError(
                f"Cannot reach the cluster at --bootstrap-server {args.bootstrap_server}: {exc}"
            ) from exc
        self.links = f"/clusters/{self.cluster_id}/links"

    def link_path(self, link: str, *parts: str) -> str:
        """The API path of a link, or of what is under it: `parts` alternate the API's words
        (mirrors, configs:alter) and names, and the names are checked before the call."""
        names = [link, *parts[1::2]]
        if any(not _PATH_WORDS.fullmatch(word) for word in parts[::2]):
            raise ValueError(f"Not a path of the API: {parts}")  # a bug in the tools, not input
        for part in names:
            if part != "-" and not _NAME.fullmatch(part):
                raise CliError(
                    f"{part!r} is not a valid name: link, topic and config names use only "
                    "letters, digits, '.', '_' and '-'."
                )
        return "/".join([self.links, link, *parts])

    def mirror_links(self, links: list[str] = ()) -> dict[str, str]:
        """Each mirror topic's link (of `links` only, if given), from the link list: no lag
        is read for this."""
        return {
            topic: link["link_name"]
            for link in self.call("GET", self.links)["data"]
            if not links or link["link_name"] in links
            for topic in link["topic_names"]
        }

    def mirror(self, link: str, topic: str) -> dict:
        return self.call("GET", self.link_path(link, "mirrors", topic))

    def call(self, method: str, path: str, body: dict | None = None, **query):
        return self.console.call(method, path, body, **query)


def print_request(request: dict, what: str) -> None:
    """Say that an action waits for approval, and how to follow and approve it."""
    print(
        f"{what} needs {request['approvals_required']} approval(s): request {request['id']} "
        f"was made and waits for an approver other than you."
    )
    print(
        f"Follow it: kafka-mirrors --describe-request {request['id']} (or {request['console_url']})"
    )
    print(f"An approver runs it with: kafka-mirrors --approve {request['id']}")
