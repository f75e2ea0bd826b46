"""The embedded stack's schema registries, one per cluster (devstack/registry.py), through
Isthmus's client of Confluent's REST API (infra/schema_registry.py): what schema linking builds
on, checked on the running registries. The destination keeps the ids and versions it is given
in IMPORT mode for all three schema types with references, refuses writes to a READONLY subject
and an id another schema holds, holds nothing of the source's unless given it, and listens on
loopback only; the client's failures say what went wrong."""

from __future__ import annotations

import json

import psutil
import pytest

from devstack import registry
from devstack.stack import Stack
from infra.registry_http import SchemaRegistryError
from infra.schema_registry import (
    REFUSED_BY_MODE,
    SUBJECT_NOT_FOUND,
    Reference,
    SchemaRegistry,
    SchemaVersion,
)
from tests.registries import DESTINATION, SOURCE, unique_name

pytestmark = pytest.mark.integration


@pytest.fixture
def name() -> str:
    return unique_name()


def avro(record: str, *fields: tuple[str, str | list]) -> str:
    """An Avro record; a field of a union type defaults to null (so a newer version with one
    stays backward compatible)."""
    listed = [
        {"name": field, "type": kind, **({"default": None} if isinstance(kind, list) else {})}
        for field, kind in fields
    ]
    return json.dumps(
        {"type": "record", "name": record, "namespace": "isthmus.test", "fields": listed}
    )


def registered(subject: str, schema: str, kind: str = "AVRO", refs=()) -> SchemaVersion:
    """Registered on the source, as the registry has it."""
    SOURCE.register(SchemaVersion(subject, 0, 0, schema, kind, tuple(refs)), keep_id=False)
    return SOURCE.version(subject, SOURCE.versions(subject)[-1])


def test_every_schema_type_with_references_keeps_its_id_and_version_on_the_destination(name):
    common = registered(f"{name}-common", avro("Common", ("a", "int")))
    order = registered(
        f"{name}-value",
        avro("Order", ("common", "isthmus.test.Common")),
        refs=[Reference("isthmus.test.Common", common.subject, common.version)],
    )
    proto = registered(
        f"{name}-proto", 'syntax = "proto3";\nmessage M { int32 a = 1; }\n', "PROTOBUF"
    )
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    as_json = registered(f"{name}-json", schema, "JSON")
    assert order.references == (Reference("isthmus.test.Common", common.subject, 1),)

    for each in (common, order, proto, as_json):  # a reference before what refers to it
        DESTINATION.set_mode("IMPORT", each.subject)
        assert DESTINATION.register(each) == each.id
        assert DESTINATION.version(each.subject, each.version) == each
        assert DESTINATION.schema(each.id)["schema"] == each.schema
    assert [DESTINATION.version(s.subject, s.version).schema_type for s in (proto, as_json)] == [
        "PROTOBUF",
        "JSON",
    ]


def test_an_id_another_schema_holds_on_the_destination_is_refused_not_overwritten(name):
    theirs = registered(f"{name}-theirs", avro("Theirs", ("a", "int")))
    DESTINATION.set_mode("IMPORT", theirs.subject)
    DESTINATION.register(theirs)
    other = SchemaVersion(f"{name}-other", 1, theirs.id, avro("Other", ("b", "string")))
    DESTINATION.set_mode("IMPORT", other.subject)
    with pytest.raises(SchemaRegistryError) as refused:
        DESTINATION.register(other)
    assert refused.value.code == REFUSED_BY_MODE
    assert DESTINATION.schema(theirs.id)["schema"] == theirs.schema


def test_a_read_only_subject_refuses_new_schemas_and_keeps_its_versions(name):
    first = registered(f"{name}-value", avro("Order", ("a", "int")))
    DESTINATION.set_mode("IMPORT", first.subject)
    DESTINATION.register(first)
    DESTINATION.set_mode("READONLY", first.subject)
    assert DESTINATION.mode(first.subject) == "READONLY"
    newer = SchemaVersion(first.subject, 2, 0, avro("Order", ("a", "int"), ("b", ["null", "int"])))
    with pytest.raises(SchemaRegistryError) as refused:
        DESTINATION.register(newer, keep_id=False)
    assert refused.value.code == REFUSED_BY_MODE
    assert "READONLY" in str(refused.value)
    assert DESTINATION.versions(first.subject) == [first.version]


def test_a_soft_deleted_version_is_listed_only_when_deleted_ones_are_asked_for(name):
    kept = registered(f"{name}-value", avro("Order", ("a", "int")))
    gone = registered(kept.subject, avro("Order", ("a", "int"), ("b", ["null", "int"])))
    SOURCE.delete_version(gone.subject, gone.version)
    assert SOURCE.versions(kept.subject) == [kept.version]
    assert SOURCE.versions(kept.subject, deleted=True) == [kept.version, gone.version]
    assert SOURCE.version(gone.subject, gone.version, deleted=True).id == gone.id


def test_failures_say_what_was_wrong_and_what_to_do(name):
    with pytest.raises(SchemaRegistryError) as missing:
        SOURCE.version(f"{name}-nowhere", 1)
    assert missing.value.code == SUBJECT_NOT_FOUND
    assert str(missing.value) == (
        f"Could not read version 1 of {name}-nowhere at {registry.SOURCE.url}: "
        "the registry said: Subject not found."
    )
    with pytest.raises(SchemaRegistryError) as unreachable:
        SchemaRegistry("http://127.0.0.1:1", timeout=2).subjects()
    assert "cannot be reached. Check that the registry is running" in str(unreachable.value)


def test_each_cluster_has_a_registry_of_its_own_on_loopback(name, stack: Stack):
    mine = registered(f"{name}-value", avro("Order", ("a", "int")))
    assert mine.subject in SOURCE.subjects()
    assert mine.subject not in DESTINATION.subjects()
    for part in stack.status([r.name for r in registry.REGISTRIES]):
        assert part.state == "healthy"
        listening = [c.laddr for c in psutil.Process(part.pid).net_connections("inet")]
        assert listening and all(address.ip == "127.0.0.1" for address in listening)
