"""Schema linking's sync (replication/schemas/subject_sync.py) between the stack's two real
registries: ids and versions identical on both sides for Avro, Protobuf and JSON Schema with
references, soft and permanent deletes followed, a conflicting id reported and left untouched, the
destination's synced subjects closed to producers' own registrations, and a second sync that
changes nothing."""

from __future__ import annotations

import json

import pytest

from devstack import registry
from infra.registry_http import SchemaRegistryError
from infra.schema_registry import (
    REFUSED_BY_MODE,
    Reference,
    SchemaRegistry,
    SchemaVersion,
)
from replication.schemas.subject_sync import sync_subjects
from tests.registries import DESTINATION, SOURCE, optional_ints, unique_name


@pytest.fixture
def name() -> str:
    return unique_name()


def avro(name: str, record: str, *fields: str) -> str:
    return optional_ints(name, record, *fields)


def add(subject: str, schema: str, kind: str = "AVRO", refs=()) -> SchemaVersion:
    SOURCE.register(SchemaVersion(subject, 0, 0, schema, kind, tuple(refs)), keep_id=False)
    return SOURCE.version(subject, SOURCE.versions(subject)[-1])


def both_sides(subject: str, deleted: bool = True) -> tuple[list, list]:
    """Every version of the subject on each side, as the registries hold them."""
    sides = []
    for side in (SOURCE, DESTINATION):
        numbers = side.versions(subject, deleted=deleted)
        sides.append([side.version(subject, n, deleted=True) for n in numbers])
    return sides[0], sides[1]


def test_ids_and_versions_are_identical_on_both_sides_for_every_type_with_references(name):
    space = json.loads(avro(name, "Common"))["namespace"]
    common = add(f"{name}-common", avro(name, "Common", "a"))
    add(f"{name}-value", avro(name, "Order", "a"))
    order = add(
        f"{name}-value",
        json.dumps(
            {
                "type": "record",
                "name": "Order",
                "namespace": space,
                "fields": [
                    {"name": "a", "type": ["null", "int"], "default": None},
                    {"name": "common", "type": ["null", f"{space}.Common"], "default": None},
                ],
            }
        ),
        refs=[Reference(f"{space}.Common", common.subject, common.version)],
    )
    proto = add(f"{name}-proto", 'syntax = "proto3";\nmessage M { int32 a = 1; }\n', "PROTOBUF")
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    add(f"{name}-json", schema, "JSON")

    done = sync_subjects(SOURCE, DESTINATION, [order.subject, proto.subject, f"{name}-json"])

    # The referenced subject came along, before the subject that refers to it.
    assert [d.subject for d in done] == [
        common.subject,
        order.subject,
        proto.subject,
        f"{name}-json",
    ]
    assert all(d.in_step for d in done), done
    assert done[1].registered == [1, 2]
    for subject in (common.subject, order.subject, proto.subject, f"{name}-json"):
        source, destination = both_sides(subject)
        assert destination == source  # subject, version, id, schema, type, references
        assert DESTINATION.mode(subject) == "IMPORT"
    assert both_sides(order.subject)[1][1].references == (
        Reference(f"{space}.Common", common.subject, 1),
    )
    # A producer cannot register a schema of its own under a synced subject.
    with pytest.raises(SchemaRegistryError) as refused:
        DESTINATION.register(
            SchemaVersion(order.subject, 3, 0, avro(name, "Order", "a", "b")), False
        )
    assert refused.value.code == REFUSED_BY_MODE

    again = sync_subjects(SOURCE, DESTINATION, [order.subject, proto.subject, f"{name}-json"])
    assert [(d.registered, d.soft_deleted, d.deleted) for d in again] == [([], [], [])] * 4
    assert [d.versions for d in again] == [[1], [1, 2], [1], [1]]


def test_a_new_version_follows_and_deletes_follow_soft_then_for_good(name):
    subject = f"{name}-value"
    for fields in (["a"], ["a", "b"], ["a", "b", "c"]):
        add(subject, avro(name, "Order", *fields))
    sync_subjects(SOURCE, DESTINATION, [subject])

    fourth = add(subject, avro(name, "Order", "a", "b", "c", "d"))
    SOURCE.delete_version(subject, 2)
    [done] = sync_subjects(SOURCE, DESTINATION, [subject])
    assert (done.registered, done.soft_deleted) == ([4], [2])
    assert DESTINATION.versions(subject) == [1, 3, 4]
    assert DESTINATION.versions(subject, deleted=True) == [1, 2, 3, 4]
    assert DESTINATION.version(subject, 4).id == fourth.id

    SOURCE.delete_version(subject, 2, permanent=True)
    [done] = sync_subjects(SOURCE, DESTINATION, [subject])
    assert done.deleted == [2]
    source, destination = both_sides(subject)
    assert destination == source and [v.version for v in destination] == [1, 3, 4]


def test_an_id_the_destination_gives_another_schema_is_a_conflict_left_untouched(name):
    subject = f"{name}-value"
    first = add(subject, avro(name, "Order", "a"))
    add(subject, avro(name, "Order", "a", "b"))
    theirs = SchemaVersion(f"{name}-theirs", 1, first.id, avro(name, "Theirs", "z"))
    DESTINATION.set_mode("IMPORT", theirs.subject)
    DESTINATION.register(theirs)  # the destination's own schema under the source's id

    [done] = sync_subjects(SOURCE, DESTINATION, [subject])

    assert not done.in_step
    assert done.conflicts == [
        f"id {first.id} (version 1 on the source) is a different schema on the destination: "
        "left as it is; the subject's later versions wait"
    ]
    assert done.registered == [] and done.versions == []
    assert DESTINATION.schema(first.id)["schema"] == theirs.schema
    assert subject not in DESTINATION.subjects(deleted=True)


def test_the_sources_compatibility_level_follows_so_producers_meet_the_same_rules_after_promote(
    name,
):
    subject = f"{name}-value"
    add(subject, avro(name, "Order", "a", "b"))
    SOURCE.set_compatibility("FULL_TRANSITIVE", subject)
    # In a context of the test's own: a producer registers there below, and the ids it is
    # given must not meet those other tests sync into the default context.
    there = SchemaRegistry(f"{registry.DESTINATION.url}/contexts/.{name}")

    [done] = sync_subjects(SOURCE, there, [subject])

    assert (done.compatibility, done.compatibility_set) == ("FULL_TRANSITIVE", True)
    assert there.compatibility(subject) == "FULL_TRANSITIVE"
    [again] = sync_subjects(SOURCE, there, [subject])
    assert (again.compatibility, again.compatibility_set) == ("FULL_TRANSITIVE", False)

    # Changed on the source, it changes on the destination at the next run.
    SOURCE.set_compatibility("NONE", subject)
    [done] = sync_subjects(SOURCE, there, [subject])
    assert done.compatibility_set and there.compatibility(subject) == "NONE"

    # Once the subject is writable there, its producers meet the source's rules: under NONE a
    # field may change its type, which the destination's own default (BACKWARD) refuses.
    there.set_mode("READWRITE", subject)
    retyped = json.dumps(
        {
            "type": "record",
            "name": "Order",
            "namespace": json.loads(avro(name, "Order"))["namespace"],
            "fields": [{"name": "a", "type": "string"}],
        }
    )
    there.register(SchemaVersion(subject, 0, 0, retyped), keep_id=False)
    assert there.versions(subject) == [1, 2]
    other = f"{name}-other"  # the same first version, never synced: the registry's own level
    there.register(SchemaVersion(other, 0, 0, avro(name, "Order", "a", "b")), keep_id=False)
    with pytest.raises(SchemaRegistryError):
        there.register(SchemaVersion(other, 0, 0, retyped), keep_id=False)
