"""The JSON filters of a cluster link, in Confluent's format: which consumer groups have their
offsets synced (`consumer.offset.group.filters`, `groupFilters`), which source topics get
mirrors automatically (`auto.create.mirror.topics.filters`, `topicFilters`) and which ACLs are
synced (`acl.filters`, `aclFilters`).

Name filters (groups, topics) are LITERAL or PREFIXED, INCLUDE or EXCLUDE; the LITERAL name `*`
matches every name. A name no INCLUDE matches is not selected, and one any EXCLUDE matches is
not selected either: exclude wins. ACL filters are Kafka's ACL binding filters (the broker
matches them, as `kafka-acls --list` does), each a resource filter and an access filter, every
value case-insensitive, `any` allowed.

Parsing checks every entry and names the offending one ("entry 2 of groupFilters: ...").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from replication.core.errors import ReplicationError

GROUPS = "groupFilters"
TOPICS = "topicFilters"
ACLS = "aclFilters"

LITERAL, PREFIXED = "LITERAL", "PREFIXED"
INCLUDE, EXCLUDE = "INCLUDE", "EXCLUDE"
_FILTER_TYPES = {"INCLUDE": INCLUDE, "EXCLUDE": EXCLUDE, "WHITELIST": INCLUDE, "BLACKLIST": EXCLUDE}
MAX_ENTRIES = 1000
MAX_JSON = 256 * 1024


class FilterError(ReplicationError):
    """A filter list Kafka's Cluster Linking would refuse; the message names the entry."""


@dataclass(frozen=True)
class NameFilter:
    name: str
    pattern_type: str = LITERAL
    filter_type: str = INCLUDE

    def matches(self, name: str) -> bool:
        if self.pattern_type == PREFIXED:
            return name.startswith(self.name)
        return self.name in ("*", name)

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "patternType": self.pattern_type, "filterType": self.filter_type}


def selected(filters: Iterable[NameFilter], name: str) -> bool:
    """Whether `name` is selected: some INCLUDE matches it and no EXCLUDE does."""
    included = False
    for f in filters:
        if f.matches(name):
            if f.filter_type == EXCLUDE:
                return False
            included = True
    return included


def including(text: str | None, top: str) -> list[NameFilter] | None:
    """The name filters a link config holds, or None when none of them includes anything (an
    enabled syncer then has nothing to do, and says so)."""
    found = parse_names(text, top) if text else []
    return found if any(f.filter_type == INCLUDE for f in found) else None


def literally_included(filters: Iterable[NameFilter], name: str) -> bool:
    """Whether a LITERAL INCLUDE names `name` itself (not `*`, not a prefix)."""
    return any(
        f.filter_type == INCLUDE and f.pattern_type == LITERAL and f.name == name for f in filters
    )


# The ACL filter's words, as the JSON spells them (lower case) and as Kafka's enums do.
_RESOURCE_TYPES = {
    "any": ResourceType.ANY,
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "cluster": ResourceType.BROKER,
    "transactional_id": ResourceType.TRANSACTIONAL_ID,
}
_PATTERN_TYPES = {
    "any": ResourcePatternType.ANY,
    "match": ResourcePatternType.MATCH,
    "literal": ResourcePatternType.LITERAL,
    "prefixed": ResourcePatternType.PREFIXED,
}
_OPERATIONS = {op.name.lower(): op for op in AclOperation if op not in (AclOperation.UNKNOWN,)}
_PERMISSIONS = {
    "any": AclPermissionType.ANY,
    "allow": AclPermissionType.ALLOW,
    "deny": AclPermissionType.DENY,
}


# What an ACL filter's fields take, as the JSON spells them.
ACL_WORDS = {
    "resource_type": tuple(_RESOURCE_TYPES),
    "pattern_type": tuple(_PATTERN_TYPES),
    "operation": tuple(_OPERATIONS),
    "permission_type": tuple(_PERMISSIONS),
}


@dataclass(frozen=True)
class AclFilter:
    resource_type: str = "any"
    name: str | None = None
    pattern_type: str = "any"
    principal: str | None = None
    host: str | None = None
    operation: str = "any"
    permission_type: str = "any"

    def binding_filter(self) -> AclBindingFilter:
        """Kafka's binding filter, for DescribeAcls on either cluster."""
        # confluent-kafka's stubs want text for these three; None matches any.
        return AclBindingFilter(
            _RESOURCE_TYPES[self.resource_type],
            self.name,  # type: ignore[arg-type]
            _PATTERN_TYPES[self.pattern_type],
            self.principal,  # type: ignore[arg-type]
            self.host,  # type: ignore[arg-type]
            _OPERATIONS[self.operation],
            _PERMISSIONS[self.permission_type],
        )

    def as_json(self) -> dict[str, dict[str, str]]:
        resource = {"resourceType": self.resource_type, "patternType": self.pattern_type}
        if self.name is not None:
            resource["name"] = self.name
        access = {"operation": self.operation, "permissionType": self.permission_type}
        if self.principal is not None:
            access["principal"] = self.principal
        if self.host is not None:
            access["host"] = self.host
        return {"resourceFilter": resource, "accessFilter": access}


# Parsing. ----------------------------------------------------------------------------------


def _document(text: str, top: str) -> list[Any]:
    if len(text) > MAX_JSON:
        raise FilterError(f"is longer than {MAX_JSON // 1024} KB; use fewer, broader filters.")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = (
            f" at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise FilterError(f'is not valid JSON{where}. Expected {{"{top}": [ ... ]}}.') from None
    if not isinstance(doc, dict) or set(doc) != {top} or not isinstance(doc[top], list):
        raise FilterError(
            f'must be a JSON object with one key, "{top}", holding a list of filters.'
        )
    if len(doc[top]) > MAX_ENTRIES:
        raise FilterError(f"has {len(doc[top])} filters; at most {MAX_ENTRIES} are allowed.")
    return doc[top]


def _where(top: str, index: int, entry: Any) -> str:
    named = entry.get("name") if isinstance(entry, dict) else None
    shown = isinstance(named, str) and named.strip()
    return f"entry {index + 1} of {top}" + (f" ({named!r})" if shown else "")


def _word(entry: dict, key: str, allowed: dict[str, Any], default: str | None, where: str) -> str:
    value = entry.get(key, default)
    if value is None:
        raise FilterError(f"{where}: {key} is required; one of {', '.join(allowed)}.")
    if not isinstance(value, str) or value.strip().lower() not in {a.lower() for a in allowed}:
        raise FilterError(f"{where}: {key} {value!r} is not one of {', '.join(allowed)}.")
    return value.strip()


def _unknown_keys(entry: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        keys = ", ".join(map(repr, unknown))
        raise FilterError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {keys}; "
            f"an entry has {', '.join(sorted(allowed))}."
        )


def parse_names(text: str, top: str) -> list[NameFilter]:
    """The name filters of a `groupFilters` or `topicFilters` document, or FilterError."""
    found = []
    for i, entry in enumerate(_document(text, top)):
        where = _where(top, i, entry)
        if not isinstance(entry, dict):
            raise FilterError(
                f'{where}: must be an object such as {{"name": "app-", '
                '"patternType": "PREFIXED", "filterType": "INCLUDE"}.'
            )
        # topicTypes: Confluent Cloud's bidirectional links; every mirror here is a local one.
        _unknown_keys(entry, {"name", "patternType", "filterType", "topicTypes"}, where)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise FilterError(f"{where}: name is required: a name, a prefix, or * for all.")
        pattern = _word(entry, "patternType", {LITERAL: 1, PREFIXED: 1}, LITERAL, where).upper()
        kind = _word(entry, "filterType", _FILTER_TYPES, INCLUDE, where).upper()
        found.append(NameFilter(name.strip(), pattern, _FILTER_TYPES[kind]))
    return found


def parse_acls(text: str) -> list[AclFilter]:
    """The filters of an `aclFilters` document (at least one), or FilterError."""
    entries = _document(text, ACLS)
    if not entries:
        raise FilterError(f"must hold at least one filter in {ACLS}.")
    found = []
    for i, entry in enumerate(entries):
        where = f"entry {i + 1} of {ACLS}"
        if not isinstance(entry, dict):
            raise FilterError(f"{where}: must be an object with resourceFilter and accessFilter.")
        _unknown_keys(entry, {"resourceFilter", "accessFilter"}, where)
        resource, access = entry.get("resourceFilter"), entry.get("accessFilter")
        if not isinstance(resource, dict) or not isinstance(access, dict):
            raise FilterError(f"{where}: needs a resourceFilter object and an accessFilter object.")
        _unknown_keys(resource, {"resourceType", "name", "patternType"}, f"{where}, resourceFilter")
        _unknown_keys(
            access, {"principal", "host", "operation", "permissionType"}, f"{where}, accessFilter"
        )
        name = _optional_text(resource, "name", f"{where}, resourceFilter")
        principal = _optional_text(access, "principal", f"{where}, accessFilter")
        if principal is not None and ":" not in principal:
            raise FilterError(
                f"{where}, accessFilter: principal {principal!r} needs a type, e.g. User:alice."
            )
        found.append(
            AclFilter(
                resource_type=_word(
                    resource, "resourceType", _RESOURCE_TYPES, None, f"{where}, resourceFilter"
                ).lower(),
                name=name,
                pattern_type=_word(
                    resource,
                    "patternType",
                    _PATTERN_TYPES,
                    "literal" if name else "any",
                    f"{where}, resourceFilter",
                ).lower(),
                principal=principal,
                host=_optional_text(access, "host", f"{where}, accessFilter"),
                operation=_word(
                    access, "operation", _OPERATIONS, None, f"{where}, accessFilter"
                ).lower(),
                permission_type=_word(
                    access, "permissionType", _PERMISSIONS, None, f"{where}, accessFilter"
                ).lower(),
            )
        )
    return found


def _optional_text(entry: dict, key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise FilterError(f"{where}: {key} must be a non-empty string, or left out for any.")
    return value.strip()


# Writing. ----------------------------------------------------------------------------------


def dump_names(filters: Iterable[NameFilter], top: str) -> str:
    return json.dumps({top: [f.as_json() for f in filters]})


def dump_acls(filters: Iterable[AclFilter]) -> str:
    return json.dumps({ACLS: [f.as_json() for f in filters]})


def normalise(text: str, top: str) -> str:
    """`text` checked and written in one canonical form, as a link config stores it."""
    if top == ACLS:
        return dump_acls(parse_acls(text))
    return dump_names(parse_names(text, top), top)


def binding_key(b: AclBinding) -> tuple[str, ...]:
    """An ACL binding as a comparable value (bindings of both clusters are compared)."""
    # confluent-kafka's stubs allow text or a number for the enums; a binding holds the enums.
    return (
        b.restype.name,  # type: ignore[union-attr]
        b.name,
        b.resource_pattern_type.name,  # type: ignore[union-attr]
        b.principal,
        b.host,
        b.operation.name,  # type: ignore[union-attr]
        b.permission_type.name,  # type: ignore[union-attr]
    )


# Topics a cluster's own services keep for themselves, never a user's data: Kafka's (`__*`),
# Confluent's services' (`_confluent-command`, `_confluent-metrics`, ksqlDB's `_confluent-ksql-*`),
# Schema Registry's store (`_schemas`) and field-encryption keys (`_schema_encoders`),
# MirrorMaker 2's (`mm2-offset-syncs.*.internal`, `*.checkpoints.internal`) and Isthmus's own.
_INTERNAL_PREFIXES = ("__", "_isthmus-", "_confluent")
_INTERNAL_NAMES = frozenset({"_schemas", "_schema_encoders"})
_INTERNAL_SUFFIXES = (".internal", "-internal")


def internal_topic(name: str) -> bool:
    """A topic of Kafka, the ecosystem's well-known services or Isthmus itself (see above):
    never mirrored, automatically or by hand, and no merge flow copies it or into it."""
    return (
        name.startswith(_INTERNAL_PREFIXES)
        or name in _INTERNAL_NAMES
        or name.endswith(_INTERNAL_SUFFIXES)
    )
