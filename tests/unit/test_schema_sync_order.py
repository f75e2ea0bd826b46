"""The order schema sync registers in, as pure logic: a version goes after the subjects it
references even when the source's listing leaves the references out (AxonOps on PostgreSQL
does), and it is registered with them. (On the real registries: tests/integration.)"""

from __future__ import annotations

import uuid
from dataclasses import replace

from infra.schema_registry import Reference, SchemaVersion
from replication.schemas.subject_sync import Snapshot, sync_read


class Registry:
    """A registry's state and the calls a sync makes of it."""

    def __init__(self, versions: list[SchemaVersion], listing_has_references: bool):
        self.versions_held = {(v.subject, v.version): v for v in versions}
        self.listing_has_references = listing_has_references
        self.registered: list[SchemaVersion] = []
        self.url = f"memory://{uuid.uuid4().hex}"  # what the sync keeps its reads by

    def listing(self, deleted: bool = False) -> list[SchemaVersion]:
        held = list(self.versions_held.values())
        return held if self.listing_has_references else [replace(v, references=()) for v in held]

    def version(self, subject: str, number: int, deleted: bool = False) -> SchemaVersion:
        return self.versions_held[subject, number]

    def mode(self, subject: str) -> str:
        return "IMPORT"

    def compatibility(self, subject: str) -> str:
        return "BACKWARD"

    def register(self, version: SchemaVersion, keep_id: bool = True) -> int:
        self.registered.append(version)
        self.versions_held[version.subject, version.version] = version
        return version.id


def test_a_version_is_registered_after_what_it_references_whatever_the_listing_says():
    base = SchemaVersion("z-common", 1, 40, '"int"')
    user = SchemaVersion("a-user", 1, 41, '"long"', references=(Reference("C", "z-common", 1),))
    for listed in (True, False):
        source, destination = Registry([base, user], listed), Registry([], True)

        done = sync_read(Snapshot(source), Snapshot(destination), ["a-user"])

        assert [v.subject for v in destination.registered] == ["z-common", "a-user"]
        assert destination.registered[1].references == user.references
        assert [(d.subject, d.registered) for d in done] == [("z-common", [1]), ("a-user", [1])]


def test_a_referenced_subject_is_followed_on_every_run_though_the_listing_lacks_references():
    # (AxonOps on PostgreSQL lists versions without their references.)
    base = SchemaVersion("z-common", 1, 40, '"int"')
    user = SchemaVersion("a-user", 1, 41, '"long"', references=(Reference("C", "z-common", 1),))
    source, destination = Registry([base, user], False), Registry([], False)
    sync_read(Snapshot(source), Snapshot(destination), ["a-user"])
    source.versions_held["z-common", 2] = SchemaVersion("z-common", 2, 42, '"long"')

    again = sync_read(Snapshot(source), Snapshot(destination), ["a-user"])

    assert [(d.subject, d.registered) for d in again] == [("z-common", [2]), ("a-user", [])]
