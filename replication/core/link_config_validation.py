"""Whether a link's configs are right: each value by its key's check (`link_configs.KEYS`),
then the set taken together (the source's brokers given; security protocol, SASL and SSL
settings that fit; ACL and consumer group sync settings that fit). `validate` names every
problem at once, and the key meant by a mistyped one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from infra.client_config import LOGIN_MODULES, parse_jaas
from replication.core.errors import ReplicationError
from replication.core.link_configs import KEYS


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
    mode = configs.get("link.mode", "DESTINATION")
    if configs.get("connection.mode") == "INBOUND" and mode != "DESTINATION":
        problems.append(
            "connection.mode=INBOUND is a source-initiated link's destination half, whose "
            f"link.mode is DESTINATION, not {mode}."
        )
    if configs.get("consumer.group.prefix.enable") == "true" and not configs.get(
        "cluster.link.prefix"
    ):
        problems.append(
            "consumer.group.prefix.enable=true needs cluster.link.prefix, the prefix it gives "
            "the synced groups."
        )
    return problems
