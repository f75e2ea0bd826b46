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
import signal
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

# (isthmus_cli._infra exists only in the tools' own install: mypy checks infra itself.)
try:  # installed alone (pip install ./cli), the tools carry infra/ inside as isthmus_cli._infra
    from isthmus_cli._infra import kafka_admin, kafka_errors  # type: ignore[import-not-found]
    from isthmus_cli._infra.client_config import librdkafka_config  # type: ignore[import-not-found]
except ModuleNotFoundError:  # with the server, infra/ is its own package
    from infra import kafka_admin, kafka_errors
    from infra.client_config import librdkafka_config

KafkaAdmin, KafkaAdminError = kafka_admin.KafkaAdmin, kafka_errors.KafkaAdminError

# librdkafka logs every failed connection attempt (many a second while a cluster is down); the
# tools report one clear error instead, so its log lines go nowhere.
kafka_admin.logger.addHandler(logging.NullHandler())
kafka_admin.logger.propagate = False

DEFAULT_CONFIG = Path.home() / ".config" / "isthmus" / "cli.properties"
URL_KEY, TOKEN_KEY = "isthmus.url", "isthmus.token"


class CliError(Exception):
    """Something the user must fix; printed to stderr, exit status 1."""


# Text from the console (reasons, names, its error messages) is shown with its control
# characters escaped, Python-style (`\x1b`, `\n`, `\u202e`): an ESC or BEL would act on the
# terminal (retitle it, clear it), a line break would forge a line of its own, and a
# bidirectional override would reorder what a line says. The console refuses them now, but
# older data may hold them. The bidi controls are the server's (replication.core.text), repeated
# here because the tools import nothing of the server. Backslashes stay as they are, so text
# reads as it was typed.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = [chr(i) for i in (*range(0x20), *range(0x7F, 0xA0))]  # Unicode category Cc
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_INERT = str.maketrans(
    {
        c: _SHORT.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        for c in [*_CONTROLS, *BIDI_CONTROLS]
    }
)


def inert(text: str) -> str:
    """`text` with every control character and bidirectional control escaped: safe to print."""
    return text.translate(_INERT)


def inert_answer(value: Any) -> Any:
    """A decoded JSON answer with every string in it (keys too) made `inert`."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, list):
        return [inert_answer(item) for item in value]
    if isinstance(value, dict):
        return {inert(key): inert_answer(item) for key, item in value.items()}
    return value


class Main(Protocol):
    """A tool's main: its arguments (None: the command line's), and its exit status."""

    def __call__(self, argv: list[str] | None = None) -> int: ...


def run(main: Main) -> Main:
    """Wrap a tool's main: errors go to stderr with a non-zero exit status."""

    def wrapped(argv: list[str] | None = None) -> int:
        try:
            status = main(argv)
            sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
            return status
        except CliError as exc:
            # The message may quote the console or the cluster: printed inert, as answers are.
            print(f"Error: {inert(str(exc))}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, as a tool killed by SIGPIPE would,
            # and send what is still buffered nowhere, or the flush at exit fails again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 128 + signal.SIGPIPE

    return wrapped


class _Parser(argparse.ArgumentParser):
    """argparse, but an option's value may begin with a dash, as Kafka's own tools take it: a
    cluster id is base64 and may (`--cluster-id -x9vnJK8T…`), which argparse alone takes for
    an option of its own."""

    def parse_known_args(self, args=None, namespace=None):
        given = list(sys.argv[1:] if args is None else args)
        joined: list[str] = []
        i = 0
        while i < len(given):
            action = self._option_string_actions.get(given[i])
            value = given[i + 1] if i + 1 < len(given) else None
            if (
                action is not None
                and action.nargs is None  # takes one value
                and value is not None
                and value.startswith("-")
                and value not in self._option_string_actions
            ):
                joined.append(f"{given[i]}={value}")
                i += 2
                continue
            joined.append(given[i])
            i += 1
        return super().parse_known_args(joined, namespace)


def parser(prog: str, description: str, *, cluster: bool = True) -> argparse.ArgumentParser:
    """The tool's options, with --command-config; --bootstrap-server too unless not `cluster`
    (a tool of what belongs to no one cluster, such as gateways)."""
    p = _Parser(prog=prog, description=description)
    if cluster:
        p.add_argument(
            "--bootstrap-server",
            required=True,
            help="the destination cluster (host:port,...), as in Kafka's own tools",
        )
    p.add_argument(
        "--command-config",
        help=(
            "properties file: Kafka client settings for --bootstrap-server, and "
            if cluster
            else "properties file with "
        )
        + f"{URL_KEY} / {TOKEN_KEY} for the Isthmus console",
    )
    return p


# Files the tools read whole: properties files and filter JSON (a link config is far smaller).
MAX_FILE = 1024 * 1024
_BLANK = " \t\f"  # what Java's Properties takes for white space
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_text(path: str | Path, what: str) -> str:
    """The text of a file the user named, or CliError saying why it cannot be used: missing,
    unreadable, too large, binary or not UTF-8. `what` says what it should hold."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE + 1)
    except OSError as exc:
        raise CliError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    if len(data) > MAX_FILE:
        raise CliError(f"{path} is larger than {MAX_FILE // 1024} KB; it should hold {what}.")
    if b"\0" in data:
        raise CliError(f"{path} is not a text file of {what} (it holds binary data).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"{path} is not a text file of {what} (it is not UTF-8 text).") from exc


def read_properties(path: str | Path) -> dict[str, str]:
    r"""A Java properties file, read as java.util.Properties.load reads one (but in UTF-8):
    `key=value` or `key: value` lines; `#` and `!` comment lines; a line ending in an odd number
    of backslashes goes on on the next, that line's leading blanks dropped; the escapes `\t`,
    `\n`, `\r`, `\f` and `\uXXXX`, and a backslash before any other character stands for that
    character: `\ ` is a space (the seed's `echo "...filters={\"groupFilters\": [ \ { \ ..."`
    writes those), `\\` a backslash, `\=` an equals sign.

    Stricter than Java, to catch a wrong file: the key must be followed by `=` or `:` (Java
    also takes a blank), and blanks at the end of a value are dropped unless escaped."""
    props = {}
    for number, line in _logical_lines(read_text(path, "key=value lines")):
        key, value = _key_and_value(line)
        if key is None:
            raise CliError(f"{path} line {number} is not 'key=value'.")
        try:
            props[_unescape(key)] = _unescape(value)
        except ValueError as exc:
            raise CliError(f"{path} line {number} {exc}.") from None
    return props


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _logical_lines(text: str):
    """(line number, logical line): comments and blank lines left out, continuations joined."""
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        number, line = i + 1, natural[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":  # a comment line is never continued
            continue
        while _odd_backslashes(line):
            line = line[:-1]
            if i == len(natural):
                break
            line += natural[i].lstrip(_BLANK)
            i += 1
        yield number, line


def _key_and_value(line: str) -> tuple[str | None, str]:
    """A logical line's raw key and value (escapes still in), or None for the key when no `=`
    or `:` follows it. The key ends at the first `=`, `:` or blank not escaped."""
    end, escaped = 0, False
    while end < len(line):
        c = line[end]
        if not escaped and (c in "=:" or c in _BLANK):
            break
        escaped = c == "\\" and not escaped
        end += 1
    key, rest = line[:end], line[end:].lstrip(_BLANK)
    if not key or rest[:1] not in ("=", ":"):
        return None, ""
    value = rest[1:].lstrip(_BLANK)
    while value and value[-1] in _BLANK and not _odd_backslashes(value[:-1]):
        value = value[:-1]
    return key, value


def _unescape(raw: str) -> str:
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        i += 1
        if c != "\\" or i == len(raw):
            out.append(c)
            continue
        c = raw[i]
        i += 1
        if c == "u":
            digits = raw[i : i + 4]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                raise ValueError(f"has a malformed \\u escape (\\u{digits}): give 4 hex digits")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    text = "".join(out)
    try:  # \uD83D\uDE00: one character written as its UTF-16 pair, as Java reads it
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return text


def split_configs(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2`, split as Kafka's kafka-configs splits --add-config: a comma inside square
    brackets does not split, and a value wholly in brackets loses them (`k=[a,b]` is `a,b`).

    Unlike Kafka's tool, which drops every bracket of a value, the brackets inside a value are
    kept, and braces group commas too (with quoted strings inside them), so that a JSON value
    is given as it is: `consumer.offset.group.filters={"groupFilters": [{...}, {...}]}`.
    """
    items = _top_level_items(text)
    configs = {}
    for item in items:
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CliError(f"{item!r} is not name=value. Write configs as k1=v1,k2=v2.")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1].strip()
        configs[name.strip()] = value
    return configs


def _top_level_items(text: str) -> list[str]:
    """`text` split at the commas outside brackets, braces and the quoted strings in braces;
    a CliError if one is left open."""
    items, start, opened, in_string, escaped = [], 0, [], False, False
    for i, c in enumerate(text):
        if in_string:  # an escaped character is taken as it is; an unescaped quote ends it
            escaped, in_string = (False, True) if escaped else (c == "\\", c != '"')
        elif c == '"' and "{" in opened:
            in_string = True
        elif c in "[{":
            opened.append(c)
        elif c in "]}":
            if opened:
                opened.pop()
        elif c == "," and not opened:
            items.append(text[start:i])
            start = i + 1
    if opened or in_string:
        what = "a quoted string" if in_string else f"a {opened[-1]!r}"
        raise CliError(
            f"The configs leave {what} open: close it (k=[a,b], k={{...}}), or give the "
            "configs in a properties file."
        )
    items.append(text[start:])
    return items


def configs_from(file: str | None, text: str | None) -> dict[str, str]:
    """Configs from a properties file and a `k=v,...` option; the option wins."""
    configs = read_properties(file) if file else {}
    configs.update(split_configs(text) if text else {})
    return configs


# A link or topic name as Kafka allows names, and the fixed words of the API's paths.
_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_PATH_WORDS = re.compile(
    r"configs(:alter)?|mirrors(:[a-z]+(-[a-z]+)*)?|verifications|flows|schemas(:sync|:promote)?"
)


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
        # Every string the console answers is made inert here, where it enters the tools, so
        # no command can print one raw (each prints what it was given, in lines of its own).
        return inert_answer(json.loads(payload)) if payload else None


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        return inert(str(json.loads(exc.read())["message"]))
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

    def mirror_links(self, links: Sequence[str] = ()) -> dict[str, str]:
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
