"""A client of Confluent Schema Registry's REST API (Confluent's own registry, and those that
speak its API, such as the embedded stack's): what schema linking reads from a source registry
and writes to a destination one, each call through the one door of `registry_http`, whose
failures are a `SchemaRegistryError` in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .registry_http import RegistryHttp, SchemaRegistryError, not_a_registry

# What Confluent's API defines: anything else is no registry's answer, and is not repeated.
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
COMPATIBILITY_LEVELS = frozenset(
    {
        "NONE",
        "BACKWARD",
        "BACKWARD_TRANSITIVE",
        "FORWARD",
        "FORWARD_TRANSITIVE",
        "FULL",
        "FULL_TRANSITIVE",
    }
)

# Confluent's error codes that callers decide on.
SUBJECT_NOT_FOUND = 40401
SUBJECT_SOFT_DELETED = 40404  # a soft delete of a subject soft-deleted already
# A write the subject's mode refuses: READONLY, an id given outside IMPORT mode, or (in IMPORT
# mode) an id another schema holds.
REFUSED_BY_MODE = 42205


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject: its schema, type (AVRO, PROTOBUF or JSON) and references."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default=())

    def body(self) -> dict[str, Any]:
        """What registering it sends (the id and version too: IMPORT mode keeps them)."""
        return {
            "schema": self.schema,
            "schemaType": self.schema_type,
            "references": [vars(r) for r in self.references],
            "id": self.id,
            "version": self.version,
        }


class SchemaRegistry(RegistryHttp):
    """The calls of Confluent's API on a registry at `url` (each request bounded as
    `RegistryHttp` says)."""

    # --- reading ---------------------------------------------------------------------------

    def subjects(self, deleted: bool = False) -> list[str]:
        """Every subject (with soft-deleted ones when asked)."""
        doing = "list the subjects"
        found = self._call("GET", "/subjects", doing, deleted=deleted) or []
        if not isinstance(found, list) or not all(isinstance(s, str) for s in found):
            raise not_a_registry(doing, self.url)
        return sorted(found)

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        found = self._call(
            "GET",
            f"/subjects/{_part(subject)}/versions",
            f"list {subject}'s versions",
            deleted=deleted,
        )
        return sorted(found or [])

    def version(self, subject: str, version: int, deleted: bool = False) -> SchemaVersion:
        found = self._call(
            "GET",
            f"/subjects/{_part(subject)}/versions/{version}",
            f"read version {version} of {subject}",
            deleted=deleted,
        )
        return _schema_version(found)

    def listing(self, deleted: bool = False, page: int = 1000) -> list[SchemaVersion]:
        """Every version of every subject (soft-deleted ones too when asked), read a page at
        a time: what a sync compares, in a few requests whatever the number of subjects."""
        found: list[SchemaVersion] = []
        while True:
            got = self._call(
                "GET",
                "/schemas",
                "list the schemas",
                deleted=deleted,
                offset=len(found),
                limit=page,
            )
            found += [_schema_version(v) for v in got or ()]
            if len(got or ()) < page:
                return found

    def schema(self, schema_id: int) -> dict[str, Any]:
        """The schema an id names: {"schema", "schemaType", "references"}."""
        found: dict[str, Any] = self._call(
            "GET", f"/schemas/ids/{schema_id}", f"read schema id {schema_id}"
        )
        return found

    def id_subjects(self, schema_id: int) -> list[str]:
        """The subjects that hold the schema an id names (soft-deleted versions too)."""
        found = self._call(
            "GET",
            f"/schemas/ids/{schema_id}/versions",
            f"read which subjects hold schema id {schema_id}",
            deleted=True,
        )
        return sorted({v["subject"] for v in found or ()})

    def mode(self, subject: str | None = None) -> str:
        """The subject's mode (READWRITE, READONLY, IMPORT), its own or else the registry's."""
        path = f"/mode/{_part(subject)}" if subject else "/mode"
        doing = f"read the mode of {subject}" if subject else "read the registry's mode"
        found = self._call("GET", path, doing, defaultToGlobal=True if subject else None)
        mode = found.get("mode") if isinstance(found, dict) else None
        if not isinstance(mode, str) or mode not in MODES:
            raise SchemaRegistryError(
                f"Could not {doing} at {self.url}: the answer names no mode of Confluent's API "
                f"({', '.join(MODES)}). Check that the URL points at a schema registry."
            )
        return mode

    def compatibility(self, subject: str) -> str:
        """The subject's compatibility level (BACKWARD, FULL_TRANSITIVE, NONE, …): its own, or
        else the registry's, which is what a new version of it is checked against."""
        found = self._call(
            "GET",
            f"/config/{_part(subject)}",
            f"read the compatibility level of {subject}",
            defaultToGlobal=True,
        )
        level = found.get("compatibilityLevel") if isinstance(found, dict) else None
        if not isinstance(level, str) or level not in COMPATIBILITY_LEVELS:
            raise SchemaRegistryError(
                f"Could not read the compatibility level of {subject} at {self.url}: the answer "
                "names no level of Confluent's API. Check that the URL points at a schema "
                "registry."
            )
        return level

    # --- writing ---------------------------------------------------------------------------

    def set_compatibility(self, level: str, subject: str) -> None:
        """Give the subject a compatibility level of its own."""
        self._call(
            "PUT",
            f"/config/{_part(subject)}",
            f"set the compatibility level of {subject} to {level}",
            body={"compatibility": level},
        )

    def set_mode(self, mode: str, subject: str | None = None, force: bool = False) -> None:
        """Set a subject's mode (or the registry's). `force`: IMPORT on a subject or registry
        that already holds schemas."""
        path = f"/mode/{_part(subject)}" if subject else "/mode"
        doing = f"set {subject} to {mode}" if subject else f"set the registry to {mode}"
        self._call("PUT", path, doing, body={"mode": mode}, force=force or None)

    def register(self, version: SchemaVersion, keep_id: bool = True) -> int:
        """Register the schema under its subject; with `keep_id`, under its own id and version
        (the subject must be in IMPORT mode). Returns the id the registry gave it."""
        body = version.body()
        if not keep_id:
            body = {k: v for k, v in body.items() if k not in ("id", "version")}
        doing = (
            f"register version {version.version} of {version.subject} (id {version.id})"
            if keep_id
            else f"register a schema under {version.subject}"
        )
        found = self._call("POST", f"/subjects/{_part(version.subject)}/versions", doing, body=body)
        return int(found["id"])

    def delete_version(self, subject: str, version: int, permanent: bool = False) -> None:
        """Soft-delete a version (or, once soft-deleted, delete it for good)."""
        self._call(
            "DELETE",
            f"/subjects/{_part(subject)}/versions/{version}",
            f"delete version {version} of {subject}",
            permanent=permanent or None,
        )

    def delete_subject(self, subject: str) -> None:
        """Delete the subject and its every version for good (soft first, as Confluent's API
        asks); a subject it does not have is no error."""
        for permanent in (False, True):
            try:
                self._call(
                    "DELETE",
                    f"/subjects/{_part(subject)}",
                    f"delete {subject}",
                    permanent=permanent or None,
                )
            except SchemaRegistryError as exc:
                if exc.code == SUBJECT_NOT_FOUND:
                    return
                if exc.code != SUBJECT_SOFT_DELETED or permanent:
                    raise


def _part(name: str) -> str:
    return quote(name, safe="")


def _schema_version(found: dict[str, Any]) -> SchemaVersion:
    return SchemaVersion(
        subject=found["subject"],
        version=int(found["version"]),
        id=int(found["id"]),
        schema=found["schema"],
        schema_type=found.get("schemaType") or "AVRO",
        references=tuple(
            Reference(r["name"], r["subject"], int(r["version"]))
            for r in found.get("references") or ()
        ),
    )
