"""The Kafka adapter's values as JSON, for a call carried to a host of another network zone and
its answer carried back (`replication/kafka/zone_calls.py`): what `KafkaAdmin` and `Records`
take and give (their dataclasses, ACL bindings, bytes, tuples, sets, dicts with any keys) and
the errors they raise, each back as the same type. Anything else is refused (`TypeError`), so
a value never turns into another on the way; nothing is looked up by a name the other end
chose beyond the types listed here."""

from __future__ import annotations

import base64
import dataclasses
import enum
from collections.abc import Callable, Iterator, KeysView, ValuesView
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from . import kafka_admin, kafka_brokers, kafka_copy, kafka_errors, kafka_groups, kafka_topics

_DATACLASSES: dict[str, type] = {
    value.__name__: value
    for module in (kafka_admin, kafka_brokers, kafka_copy, kafka_groups, kafka_topics)
    for value in vars(module).values()
    if isinstance(value, type) and dataclasses.is_dataclass(value)
}
_ENUMS: dict[str, type[enum.Enum]] = {
    e.__name__: e for e in (AclOperation, AclPermissionType, ResourcePatternType, ResourceType)
}
_ERRORS: dict[str, type[kafka_errors.KafkaAdminError]] = {
    e.__name__: e
    for e in (
        kafka_errors.KafkaAdminError,
        kafka_errors.Unreachable,
        kafka_errors.InvalidClientConfig,
        kafka_errors.TopicNotFound,
        kafka_errors.AuthorizerDisabled,
    )
}
_ACL_FIELDS = (
    "restype",
    "name",
    "resource_pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


def encode(value: Any) -> Any:
    """`value` as JSON-able data that `decode` turns back into an equal value."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | Iterator | KeysView | ValuesView):  # an argument's iterable
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, set | frozenset):
        return {"set": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    return _encode_object(value)


def _encode_object(value: Any) -> Any:
    if isinstance(value, enum.Enum) and _ENUMS.get(type(value).__name__) is type(value):
        return {"enum": type(value).__name__, "name": value.name}
    if isinstance(value, AclBinding):  # AclBindingFilter is one too
        kind = "acl_filter" if isinstance(value, AclBindingFilter) else "acl"
        return {kind: [encode(getattr(value, f)) for f in _ACL_FIELDS]}
    if dataclasses.is_dataclass(value) and _DATACLASSES.get(type(value).__name__) is type(value):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"data": type(value).__name__, "fields": fields}
    if isinstance(value, BaseException):
        return encode_error(value)
    raise TypeError(f"a {type(value).__name__} cannot be carried to another host")


def decode(data: Any) -> Any:
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    kind = next((k for k in _DECODERS if isinstance(data, dict) and k in data), None)
    if kind is None:
        raise TypeError("not a carried value")
    return _DECODERS[kind](data)


def _decode_data(data: dict[str, Any]) -> Any:
    fields = {k: decode(v) for k, v in data["fields"].items()}
    return _known(_DATACLASSES, data["data"])(**fields)


_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "tuple": lambda d: tuple(decode(v) for v in d["tuple"]),
    "set": lambda d: {decode(v) for v in d["set"]},
    "dict": lambda d: {decode(k): decode(v) for k, v in d["dict"]},
    "bytes": lambda d: base64.b64decode(d["bytes"]),
    "enum": lambda d: _known(_ENUMS, d["enum"])[d["name"]],
    "acl": lambda d: AclBinding(*[decode(v) for v in d["acl"]]),
    "acl_filter": lambda d: AclBindingFilter(*[decode(v) for v in d["acl_filter"]]),
    "data": _decode_data,
    "error": lambda d: decode_error(d),
}


def encode_error(exc: BaseException) -> dict[str, Any]:
    """An error raised on the other host: the adapter's own kinds and a client's
    KafkaException as themselves, any other as a KafkaAdminError saying what it was."""
    if type(exc).__name__ in _ERRORS and isinstance(exc, kafka_errors.KafkaAdminError):
        return {"error": type(exc).__name__, "message": str(exc), "code": exc.code}
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        error: KafkaError = exc.args[0]
        return {"error": "KafkaException", "message": error.str(), "code": error.code()}
    return {"error": "KafkaAdminError", "message": str(exc) or type(exc).__name__, "code": None}


def decode_error(data: dict[str, Any]) -> Exception:
    if data["error"] == "KafkaException":
        return KafkaException(KafkaError(data["code"], data["message"]))
    error: Exception = _known(_ERRORS, data["error"])(data["message"], data["code"])
    return error


def _known(types: dict[str, Any], name: str) -> Any:
    if name not in types:
        raise TypeError(f"{name!r} is not a type carried between hosts")
    return types[name]
