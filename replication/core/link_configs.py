"""Cluster link configs: the keys a link accepts, their defaults and checks, and how the source
connection keys (Java client names, as Cluster Linking takes them) become librdkafka settings.

Keys and defaults follow Confluent Cluster Linking.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from infra.client_config import LOGIN_MODULES, parse_jaas
from replication.core import crypto
from replication.core.errors import FieldProblems, ReplicationError

PREFIX_PATTERN = re.compile(r"[a-zA-Z0-9._-]{1,200}")
# Kafka's INT and LONG config types: a value beyond them is refused by Kafka, so here too.
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")
# host:port, with an optional listener name (PLAINTEXT://) and IPv6 in brackets, as Kafka reads it
_BROKER = re.compile(
    r"(?:[A-Za-z_][A-Za-z0-9_]*://)?(\[[0-9A-Fa-f:.%]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})"
)


def _whole(low: int, high: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not _DIGITS.fullmatch(value) or not low <= int(value) <= high:
            raise ValueError(f"must be a whole number from {low} to {high}")
        return str(int(value))

    return check


_positive_int = _whole(1, JAVA_INT_MAX)
_non_negative_int = _whole(0, JAVA_INT_MAX)
_positive_long = _whole(1, JAVA_LONG_MAX)


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


def _boolean(value: str) -> str:
    if value.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return value.lower()


def _start_offset_spec(value: str) -> str:
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


def _filters(top: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        from replication.core import filters

        try:
            return filters.normalise(value, top)
        except filters.FilterError as exc:
            raise ValueError(str(exc).rstrip(".")) from None

    return check


def _prefix(value: str) -> str:
    if not PREFIX_PATTERN.fullmatch(value):
        raise ValueError("may hold only letters, digits, '.', '_' and '-'")
    return value


def _subject_filters(value: str) -> str:
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


def _topic_config_list(value: str) -> str:
    from replication.core.topic_configs import SYNCABLE

    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = sorted(set(names) - SYNCABLE)
    if unknown:
        raise ValueError(
            f"names configs that are never synced: {', '.join(unknown)}. "
            f"Syncable configs: {', '.join(sorted(SYNCABLE))}"
        )
    return ",".join(names)


def _choice(*allowed: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.upper() not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value.upper()

    return check


def _only(expected: str, why: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.upper() != expected:
            raise ValueError(f"can only be {expected}: {why}")
        return expected

    return check


def _one_of(allowed: tuple[str, ...], why: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.upper() not in allowed:
            raise ValueError(f"can only be {' or '.join(allowed)}: {why}")
        return value.upper()

    return check


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def _tls_file(inline: str) -> Callable[[str], str]:
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


def _mechanism(value: str) -> str:
    return _choice("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")(value)


@dataclass(frozen=True)
class ConfigKey:
    name: str
    default: str | None
    check: Callable[[str], str]
    doc: str
    immutable: bool = False  # set at creation only
    read_only: bool = False  # shown, never changed
    connection: bool = False  # part of the client config for the source


_SSL_KEYS: dict[str, tuple[Callable[[str], str], str]] = {
    "ssl.truststore.location": (
        _tls_file("ssl.truststore.certificates"),
        "Path of a PEM file of trusted CA certificates, in the console's TLS files directory.",
    ),
    "ssl.truststore.certificates": (_text, "Trusted CA certificates, inline PEM."),
    "ssl.truststore.type": (
        _only("PEM", "the console's clients read trust stores as PEM"),
        "PEM.",
    ),
    "ssl.truststore.password": (str, "Not needed for PEM trust stores; accepted and unused."),
    "ssl.keystore.location": (
        _tls_file("ssl.keystore.key and ssl.keystore.certificate.chain"),
        "Path of the client key store (PKCS12) for mutual TLS, in the console's TLS files "
        "directory.",
    ),
    "ssl.keystore.password": (str, "Password of the key store."),
    "ssl.keystore.type": (_choice("PKCS12", "PEM"), "PKCS12 or PEM."),
    "ssl.keystore.certificate.chain": (_text, "Client certificate chain, inline PEM."),
    "ssl.keystore.key": (_text, "Client private key, inline PEM."),
    "ssl.key.password": (str, "Password of the client private key."),
    "ssl.endpoint.identification.algorithm": (
        lambda v: _choice("HTTPS", "")(v).lower(),
        "https (check the broker host name) or empty to skip the check.",
    ),
}

KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in [
        ConfigKey(
            "bootstrap.servers",
            None,
            check_brokers,
            "Brokers of the source cluster, host:port[,host:port].",
            connection=True,
        ),
        ConfigKey(
            "security.protocol",
            "PLAINTEXT",
            _choice("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
            "How the link connects to the source.",
            connection=True,
        ),
        ConfigKey(
            "sasl.mechanism", "PLAIN", _mechanism, "SASL mechanism for the source.", connection=True
        ),
        ConfigKey(
            "sasl.jaas.config",
            None,
            _text,
            "The link's SASL login, e.g. org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="u" password="p";',
            connection=True,
        ),
        ConfigKey(
            "sasl.username", None, _text, "SASL user, instead of sasl.jaas.config.", connection=True
        ),
        ConfigKey(
            "sasl.password",
            None,
            _text,
            "SASL password, instead of sasl.jaas.config.",
            connection=True,
        ),
        *(
            ConfigKey(name, None, check, doc, connection=True)
            for name, (check, doc) in _SSL_KEYS.items()
        ),
        ConfigKey(
            "metadata.max.age.ms",
            "300000",
            _positive_long,
            "How often the link refreshes source metadata; new source partitions appear on "
            "the mirror within this time.",
        ),
        ConfigKey(
            "topic.config.sync.ms",
            "5000",
            _positive_int,
            "How often mirror topic configs are refreshed from the source.",
        ),
        ConfigKey(
            "topic.config.sync.include",
            None,
            _topic_config_list,
            "Comma-separated syncable topic configs to sync; unset means all. Configs left out "
            "may be overridden on the mirror.",
        ),
        ConfigKey(
            "cluster.link.prefix",
            None,
            _prefix,
            "Prefix added to mirror topic names. Set at creation only.",
            immutable=True,
        ),
        ConfigKey(
            "remote.cluster.link.prefix",
            None,
            _prefix,
            "On a bidirectional link: the prefix of the other half's mirror topics, on this "
            "link's source (by default cluster.link.prefix). Prefixes that name each topic's "
            "origin (dc1. on dc2, dc2. on dc1) are the prefixed active-active shape. Set at "
            "creation only.",
            immutable=True,
        ),
        ConfigKey(
            "cluster.link.paused",
            "false",
            _boolean,
            "Pause the whole link; its mirrors show LINK_PAUSED.",
        ),
        ConfigKey(
            "mirror.start.offset.spec",
            "earliest",
            _start_offset_spec,
            "Where new mirrors begin: earliest, latest or an ISO-8601 timestamp.",
        ),
        ConfigKey(
            "availability.check.ms",
            "60000",
            _positive_int,
            "Interval of the source availability probe.",
        ),
        ConfigKey(
            "availability.check.consecutive.failure.threshold",
            "5",
            _positive_int,
            "Failed probes in a row after which the link is UNAVAILABLE.",
        ),
        ConfigKey(
            "cluster.link.retry.timeout.ms",
            "300000",
            _non_negative_int,
            "How long a missing source topic is retried before its mirror FAILS.",
        ),
        ConfigKey(
            "consumer.offset.sync.enable",
            "false",
            _boolean,
            "Sync the committed offsets of the groups consumer.offset.group.filters selects to "
            "the same groups on the destination, translated to the mirrors' offsets.",
        ),
        ConfigKey(
            "consumer.offset.sync.ms",
            "30000",
            _whole(1000, JAVA_INT_MAX),
            "How often consumer offsets are synced, in ms (at least 1000).",
        ),
        ConfigKey(
            "consumer.offset.group.filters",
            None,
            _filters("groupFilters"),
            'Which consumer groups are synced: {"groupFilters": [{"name": "*", "patternType": '
            '"LITERAL", "filterType": "INCLUDE"}]}. With none, no group is synced.',
        ),
        ConfigKey(
            "consumer.group.prefix.enable",
            "false",
            _boolean,
            "Give synced groups the link prefix on the destination (needs cluster.link.prefix).",
            immutable=True,
        ),
        ConfigKey(
            "acl.sync.enable",
            "false",
            _boolean,
            "Sync the source ACLs acl.filters selects to the destination (not with a prefix).",
        ),
        ConfigKey(
            "acl.sync.ms",
            "5000",
            _whole(1000, JAVA_INT_MAX),
            "How often ACLs are synced, in ms (at least 1000).",
        ),
        ConfigKey(
            "schema.sync.enable",
            "false",
            _boolean,
            "Isthmus's own: sync the schemas of the mirrors' subjects (<source topic>-key and "
            "-value, and the subjects they reference) from the source cluster's schema "
            "registry to the destination's, under the same ids and versions.",
        ),
        ConfigKey(
            "schema.subjects",
            None,
            _subject_filters,
            "Which subjects schema sync copies: names, comma-separated, a name ending in * "
            "for every subject it begins (* alone: every subject). Unset: the subjects of the "
            "link's mirrors. A subject a mirrored record's schema id names is synced whatever "
            "this says: the record waits for it.",
        ),
        ConfigKey(
            "schema.context",
            None,
            _prefix,
            "A schema context of the destination's registry to sync into (ids and versions "
            "are kept within it; consumers read through <registry URL>/contexts/.<context>). "
            "Unset: the registry's default context.",
        ),
        ConfigKey(
            "schema.source.context",
            None,
            _prefix,
            "A schema context of the source's registry to sync from (a bidirectional link's "
            "other half reads from the context this half syncs into). Unset: the registry's "
            "default context.",
        ),
        ConfigKey(
            "schema.sync.ms",
            "30000",
            _whole(1000, JAVA_INT_MAX),
            "How often schemas are synced, in ms (at least 1000).",
        ),
        ConfigKey(
            "acl.filters",
            None,
            _filters("aclFilters"),
            'Which ACLs are synced: {"aclFilters": [{"resourceFilter": {"resourceType": '
            '"topic", "name": "orders", "patternType": "literal"}, "accessFilter": '
            '{"operation": "any", "permissionType": "any"}}]}. Destination ACLs these filters '
            "select are made equal to the source's; others are never touched.",
        ),
        ConfigKey(
            "auto.create.mirror.topics.enable",
            "false",
            _boolean,
            "Create mirrors automatically for the source topics "
            "auto.create.mirror.topics.filters selects, now and later.",
        ),
        ConfigKey(
            "auto.create.mirror.topics.filters",
            None,
            _filters("topicFilters"),
            'Which source topics get mirrors automatically: {"topicFilters": [{"name": '
            '"orders", "patternType": "PREFIXED", "filterType": "INCLUDE"}]}.',
        ),
        ConfigKey(
            "link.mode",
            "DESTINATION",
            _one_of(
                ("DESTINATION", "BIDIRECTIONAL"),
                "Isthmus runs links from the destination side; BIDIRECTIONAL joins two "
                "registered clusters with a link each way, under one name",
            ),
            "This side's role: DESTINATION, or BIDIRECTIONAL (a link each way between two "
            "registered clusters, which reverse-and-start-mirror and truncate-and-restore need).",
            immutable=True,
        ),
        ConfigKey(
            "connection.mode",
            "OUTBOUND",
            _only("OUTBOUND", "the destination side opens the connection to the source"),
            "Which side opens the connection.",
            read_only=True,
        ),
    ]
}
# What says where and as whom a link connects: changing any of it sends the link's
# credentials somewhere new, so it needs them given again.
CONNECTION_KEYS = frozenset(k.name for k in KEYS.values() if k.connection)


def validate(configs: dict[str, str], changed: Iterable[str] | None = None) -> dict[str, str]:
    """Check every key and value (or, given `changed`, the values of those keys only: stored
    ones accepted under older rules stay as they are), and that they fit together; return them
    normalised.

    Raises ReplicationError naming every problem at once, and listing the valid keys when a
    key is unknown.
    """
    problems: list[str] = []
    unknown: list[str] = []
    clean: dict[str, str] = {}
    checked = None if changed is None else set(changed)
    for name, value in configs.items():
        key = KEYS.get(name)
        if key is None:
            unknown.append(name)
            continue
        if checked is not None and name not in checked:
            clean[name] = value
            continue
        try:
            clean[name] = key.check(str(value).strip())
        except ValueError as exc:
            problems.append(f"{name} {exc}.")
    if unknown:
        guesses = [
            f"{u!r} (did you mean {m[0]!r}?)" if (m := _close(u)) else repr(u) for u in unknown
        ]
        problems.append(
            f"Unknown link config{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(guesses)}. Valid link configs: {', '.join(KEYS)}."
        )
    if not problems:
        problems = _check_together(clean)
    if problems:
        raise ReplicationError(" ".join(problems))
    return clean


def _close(name: str) -> list[str]:
    return difflib.get_close_matches(name, KEYS, n=1, cutoff=0.8)


def _check_together(configs: dict[str, str]) -> list[str]:
    """What is wrong with the configs taken together (each one on its own being right)."""
    problems = []
    if not configs.get("bootstrap.servers"):
        problems.append("bootstrap.servers is required: the source cluster's brokers.")
    return problems + _connection_problems(configs) + _sync_problems(configs)


def _connection_problems(configs: dict[str, str]) -> list[str]:
    """Security protocol, SASL and SSL settings that do not fit together."""
    problems = []
    protocol = configs.get("security.protocol", "PLAINTEXT")
    if protocol.startswith("SASL"):
        problems += _sasl_problems(configs, protocol)
    # A mechanism alone says nothing without SASL, and Kafka's clients ignore it there (the
    # seed's three-broker demo sets it so); credentials would never be sent: refused.
    elif any(k.startswith("sasl.") and k != "sasl.mechanism" for k in configs):
        problems.append(
            f"SASL settings are given but security.protocol is {protocol}; "
            "set security.protocol=SASL_PLAINTEXT or SASL_SSL."
        )
    if not protocol.endswith("SSL") and any(k.startswith("ssl.") for k in configs):
        problems.append(
            f"SSL settings are given but security.protocol is {protocol}; "
            "set security.protocol=SSL or SASL_SSL."
        )
    return problems


def _sasl_problems(configs: dict[str, str], protocol: str) -> list[str]:
    mechanism = configs.get("sasl.mechanism", "PLAIN")
    if "sasl.jaas.config" not in configs:
        if "sasl.username" in configs and "sasl.password" in configs:
            return []
        return [
            f"security.protocol={protocol} needs the link's credentials: sasl.jaas.config, "
            "or sasl.username and sasl.password."
        ]
    try:
        module, _, _ = parse_jaas(configs["sasl.jaas.config"])
    except ValueError as exc:
        return [f"sasl.jaas.config {exc}."]
    if mechanism not in LOGIN_MODULES[module]:
        return [
            f"sasl.jaas.config uses {module.rsplit('.', 1)[1]}, which does not "
            f"fit sasl.mechanism={mechanism}."
        ]
    return []


def _sync_problems(configs: dict[str, str]) -> list[str]:
    """ACL and consumer group sync settings that do not fit together."""
    problems = []
    if configs.get("acl.sync.enable") == "true":
        if not configs.get("acl.filters"):
            problems.append(
                "acl.sync.enable=true needs acl.filters: say which ACLs to sync, e.g. "
                '{"aclFilters": [{"resourceFilter": {"resourceType": "any", "patternType": '
                '"any"}, "accessFilter": {"operation": "any", "permissionType": "any"}}]}.'
            )
        if configs.get("cluster.link.prefix"):
            problems.append(
                "acl.sync.enable=true cannot be used on a link with cluster.link.prefix: the "
                "synced ACLs would name the source's topics and groups, not the prefixed ones."
            )
    if "remote.cluster.link.prefix" in configs and configs.get("link.mode") != "BIDIRECTIONAL":
        problems.append(
            "remote.cluster.link.prefix names the prefix of a bidirectional link's other half; "
            "this link is not bidirectional (set link.mode=BIDIRECTIONAL, or give the link the "
            "other way its own cluster.link.prefix)."
        )
    if configs.get("consumer.group.prefix.enable") == "true" and not configs.get(
        "cluster.link.prefix"
    ):
        problems.append(
            "consumer.group.prefix.enable=true needs cluster.link.prefix, the prefix it gives "
            "the synced groups."
        )
    return problems


def from_cluster(cluster) -> dict[str, str]:
    """A registered cluster's connection as link configs: its registered address and the
    principal registered for links from it, never the console's own credentials (often a
    super-user, which Kafka lets past every ACL, a mirror's deny-write rule too)."""
    if cluster.link_config or cluster.link_secret_config:
        return cluster.link_connection_config()
    if cluster.secret_config:
        problem = ReplicationError(
            f"Cluster {cluster.name} has no link credentials registered, and its own are the "
            "console's, which links do not borrow. Ask an admin to set the credentials links "
            f"from {cluster.name} use (a principal that may only read), or leave the source "
            "cluster empty and give the link's own connection settings."
        )
        raise FieldProblems({"source": problem})
    return {"bootstrap.servers": cluster.bootstrap_servers}


def bound_to_cluster(cluster, typed: dict[str, str]) -> dict[str, str]:
    """The configs of a link whose source is the registered `cluster`: its address and link
    principal, then the typed configs, which may not change how or where it connects: the
    registered credentials go to the registered address only."""
    base = from_cluster(cluster)
    changed = sorted(
        k for k in typed if k in CONNECTION_KEYS and typed[k].strip() != base.get(k, "")
    )
    if changed:
        raise FieldProblems.one(
            "configs",
            f"The link takes its connection from the registered cluster {cluster.name} "
            f"({cluster.bootstrap_servers}), so {', '.join(changed)} cannot be given too: "
            "registered credentials are used at the registered address only. To connect "
            "elsewhere, leave the source cluster empty and give the link's own "
            "bootstrap.servers and credentials.",
        )
    return {**base, **typed}


def effective(configs: dict[str, str], name: str) -> str | None:
    """The value of `name`: as set, else its default."""
    return configs.get(name, KEYS[name].default)


@dataclass(frozen=True)
class ConfigEntry:
    """One link config as describe shows it (the fields of Kafka REST's link config data)."""

    name: str
    value: str | None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str
    doc: str


def describe(plain: dict[str, str], secret: dict[str, str]) -> list[ConfigEntry]:
    """Every link config that is set or has a default; secret values masked."""
    shown = crypto.masked(plain, secret)
    entries = []
    for key in KEYS.values():
        if key.name not in shown and key.default is None:
            continue
        is_set = key.name in shown
        entries.append(
            ConfigEntry(
                name=key.name,
                value=shown[key.name] if is_set else key.default,
                is_default=not is_set,
                is_read_only=key.read_only or key.immutable,
                is_sensitive=key.name in secret,
                source="DYNAMIC_CLUSTER_LINK_CONFIG" if is_set else "DEFAULT_CONFIG",
                doc=key.doc,
            )
        )
    return entries
