"""The checks of single link config values: each takes a value as typed and returns it
normalised, or raises ValueError saying why not (whole numbers within Kafka's INT and LONG,
broker lists, booleans, start offsets, filters, prefixes, subject and topic config lists, a
choice among names, files in the console's TLS directory). The table of keys
(`link_configs.KEYS`) names one for each key; the cluster registry checks broker lists and long
values with them too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.conf import settings

PREFIX_PATTERN = re.compile(r"[a-zA-Z0-9._-]{1,200}")
# Kafka's INT and LONG config types: a value beyond them is refused by Kafka, so here too.
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")
# host:port, with an optional listener name (PLAINTEXT://) and IPv6 in brackets, as Kafka reads it
_BROKER = re.compile(
    r"(?:[A-Za-z_][A-Za-z0-9_]*://)?(\[[0-9A-Fa-f:.%]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})"
)


def whole(low: int, high: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not _DIGITS.fullmatch(value) or not low <= int(value) <= high:
            raise ValueError(f"must be a whole number from {low} to {high}")
        return str(int(value))

    return check


positive_int = whole(1, JAVA_INT_MAX)
non_negative_int = whole(0, JAVA_INT_MAX)
positive_long = whole(1, JAVA_LONG_MAX)


def check_brokers(value: str) -> str:
    """`value` as Kafka reads bootstrap.servers (host:port entries), or ValueError saying why
    not; the link configs and the cluster registry check it alike."""
    entries = [e.strip() for e in value.split(",")]
    for entry in entries:
        found = _BROKER.fullmatch(entry)
        if found is None or not 1 <= int(found[2]) <= 65535:
            raise ValueError(
                f"has {entry!r}, which is not host:port (a port from 1 to 65535); "
                "give host:port[,host:port]"
            )
    return ",".join(entries)


def boolean(value: str) -> str:
    if value.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return value.lower()


def start_offset_spec(value: str) -> str:
    if value.lower() in ("earliest", "latest"):
        return value.lower()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            "must be earliest, latest or an ISO-8601 timestamp such as 2026-11-21T09:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise ValueError("needs a time zone, e.g. 2026-11-21T09:00:00Z or +01:00")
    if moment.timestamp() < 0:
        raise ValueError("is before 1970-01-01, where Kafka's timestamps begin")
    return value


def filter_json(top: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        from replication.core import filters

        try:
            return filters.normalise(value, top)
        except filters.FilterError as exc:
            raise ValueError(str(exc).rstrip(".")) from None

    return check


def prefix(value: str) -> str:
    if not PREFIX_PATTERN.fullmatch(value):
        raise ValueError("may hold only letters, digits, '.', '_' and '-'")
    return value


def subject_filters(value: str) -> str:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise ValueError("names no subject: give subject names, prefixes ending in *, or *")
    for name in names:
        if "*" in name[:-1] or not name.isprintable() or len(name) > 255:
            raise ValueError(
                f"has {name!r}, which is not a subject name or a prefix: a * may only end a "
                "name, and names are printable, at most 255 characters"
            )
    return ",".join(names)


def topic_config_list(value: str) -> str:
    from replication.core.topic_configs import SYNCABLE

    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = sorted(set(names) - SYNCABLE)
    if unknown:
        raise ValueError(
            f"names configs that are never synced: {', '.join(unknown)}. "
            f"Syncable configs: {', '.join(sorted(SYNCABLE))}"
        )
    return ",".join(names)


def choice(*allowed: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.upper() not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value.upper()

    return check


def only(expected: str, why: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.upper() != expected:
            raise ValueError(f"can only be {expected}: {why}")
        return expected

    return check


def one_of(allowed: tuple[str, ...], why: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.upper() not in allowed:
            raise ValueError(f"can only be {' or '.join(allowed)}: {why}")
        return value.upper()

    return check


def text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def tls_file(inline: str) -> Callable[[str], str]:
    """A file the console reads on its own machine: only in its TLS files directory, so that
    link configs cannot be used to find out what exists elsewhere on the server."""

    def check(value: str) -> str:
        allowed = Path(settings.TLS_FILES_DIR)
        path = Path(value.strip())
        # resolved, symlinks too, whether or not the file exists: the answer tells nothing
        resolved = (path if path.is_absolute() else allowed / path).resolve()
        if not value.strip() or not resolved.is_relative_to(allowed):
            raise ValueError(
                f"must name a file in {allowed}, the console's TLS files directory "
                f"(ISTHMUS_TLS_DIR); files elsewhere on the server are not read. Or give the "
                f"PEM inline with {inline}"
            )
        return str(resolved)

    return check


def mechanism(value: str) -> str:
    return choice("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")(value)
