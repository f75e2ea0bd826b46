"""Schema linking's sync of subjects from one registry to another: each subject copied with
the same ids and versions, so that records, which name their schema by id, decode on both
sides. It knows nothing of links: `link_schema_sync` runs it for a link.

`sync_subjects` (`sync_read` on registries read once, `Snapshot`) brings each subject on the
destination in step with the source:
- the subject is put in IMPORT mode on the destination (which keeps the ids and versions it is
  given, and takes no schema from producers without them);
- every version the source has (soft-deleted ones too) is registered under its own id and
  version, oldest first, after the subjects it references (so references resolve);
- a version soft-deleted on the source is soft-deleted on the destination; one deleted for good
  on the source is deleted for good there too;
- an id the destination already gives a different schema is a conflict: reported, never
  overwritten, and the subject's later versions wait behind it (they may build on it).

What it did is returned per subject (`SubjectSync`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from infra.registry_http import SchemaRegistryError
from infra.schema_registry import SUBJECT_NOT_FOUND, SchemaRegistry, SchemaVersion
from infra.schema_text import same_schema

log = logging.getLogger(__name__)

IMPORT, READWRITE = "IMPORT", "READWRITE"


@dataclass
class SubjectSync:
    """One subject's sync: the versions it has in step, what it changed, what stopped it."""

    subject: str
    versions: list[int] = field(default_factory=list)  # in step on both sides now
    registered: list[int] = field(default_factory=list)
    soft_deleted: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    error: str = ""
    compatibility: str = ""  # the level new versions are checked against, on both sides now
    compatibility_set: bool = False  # given to the destination's subject by this run

    @property
    def in_step(self) -> bool:
        return not self.conflicts and not self.error


# Versions as registries gave them alone, by (registry, subject, number, id): see Snapshot.whole.
_WHOLE: dict[tuple[str, str, int, int | None], SchemaVersion] = {}
WHOLE_KEPT = 10_000


class Snapshot:
    """A registry as one run reads it: every version of every subject, soft-deleted ones too,
    in two listings (a few requests, whatever the number of subjects). What the run writes is
    added as it goes; what it deletes is confirmed first with the registry itself (`confirm`),
    since a listing read a page at a time may miss a version registered meanwhile."""

    def __init__(self, registry: SchemaRegistry, levels: dict[str, str] | None = None):
        self.registry = registry
        # Compatibility levels an earlier run gave its subjects: not read again while the
        # source's stays the same (a promote checks them: `subject_promotion.make_writable`).
        self.levels = levels or {}
        self.read: dict[tuple[str, str, int, int | None], SchemaVersion] = {}
        self.every: dict[str, dict[int, SchemaVersion]] = {}
        self.by_id: dict[int, SchemaVersion] = {}
        for version in registry.listing(deleted=True):
            self.add(version)
        self.live = {(v.subject, v.version) for v in registry.listing()}

    def add(self, version: SchemaVersion) -> None:
        self.every.setdefault(version.subject, {})[version.version] = version
        self.by_id.setdefault(version.id, version)

    def subjects(self) -> set[str]:
        """The subjects with a live version (as the registry's own subject list has them)."""
        return {subject for subject, _ in self.live}

    def versions(self, subject: str) -> tuple[list[int], list[int]]:
        """(every version, soft-deleted ones included; the live ones)."""
        every = sorted(self.every.get(subject, ()))
        return every, [n for n in every if (subject, n) in self.live]

    def version(self, subject: str, number: int) -> SchemaVersion:
        return self.every[subject][number]

    def whole(self, subject: str, number: int) -> SchemaVersion:
        """A version as the registry gives it alone: some registries' listings leave the
        references out (AxonOps on PostgreSQL does), and a version is registered with them.
        One the listing has is read once per process (a version never changes; its id tells
        it from one registered anew under the same number after a delete for good)."""
        listed = self.every.get(subject, {}).get(number)
        key = (self.registry.url, subject, number, listed.id if listed else None)
        kept = _WHOLE if listed is not None else self.read
        if key not in kept:
            if len(kept) >= WHOLE_KEPT:
                kept.clear()
            kept[key] = self.registry.version(subject, number, deleted=True)
        return kept[key]

    def confirm(self, subject: str) -> tuple[list[int], list[int]]:
        """The subject's versions as the registry says now."""
        return _versions(self.registry, subject)


def referenced(source: Snapshot, subjects: list[str]) -> list[str]:
    """`subjects` and every subject their versions reference, each after those it references
    (so a reference is registered before what refers to it)."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(subject: str) -> None:
        if subject in seen:
            return
        seen.add(subject)
        for number in source.versions(subject)[0]:
            for ref in source.whole(subject, number).references:  # (listings may lack them)
                visit(ref.subject)
        ordered.append(subject)

    for subject in subjects:
        visit(subject)
    return ordered


def sync_subjects(
    source: SchemaRegistry, destination: SchemaRegistry, subjects: list[str]
) -> list[SubjectSync]:
    """Bring each subject (and those it references) in step on the destination. A registry
    that refuses a subject fails that subject alone; one that does not answer, the run."""
    return sync_read(Snapshot(source), Snapshot(destination), subjects)


def sync_read(source: Snapshot, destination: Snapshot, subjects: list[str]) -> list[SubjectSync]:
    """Each subject in step, after the subjects its versions to register reference (read from
    those versions themselves, whatever the listing said)."""
    done: dict[str, SubjectSync] = {}

    def visit(subject: str) -> None:
        if subject in done:
            return
        result = SubjectSync(subject)
        done[subject] = result  # (before its references: a cycle ends here)
        try:
            for ref in _references_to_register(source, destination, subject):
                visit(ref)
            _sync(source, destination, result)
        except SchemaRegistryError as exc:
            if exc.status is None:  # no answer at all: the next subjects would only wait too
                raise
            result.error = str(exc)
            log.warning("Schema subject %s not synced: %s", subject, exc)
        done[subject] = done.pop(subject)  # in the order they were synced

    for subject in referenced(source, subjects):
        visit(subject)
    return list(done.values())


def _references_to_register(source: Snapshot, destination: Snapshot, subject: str) -> list[str]:
    """The subjects referenced by the versions of `subject` the destination lacks."""
    there = set(destination.versions(subject)[0])
    missing = [n for n in source.versions(subject)[0] if n not in there]
    return [ref.subject for n in missing for ref in source.whole(subject, n).references]


def _versions(registry: SchemaRegistry, subject: str) -> tuple[list[int], list[int]]:
    """(every version, soft-deleted ones included; the live ones), none for a subject it lacks."""
    try:
        every = registry.versions(subject, deleted=True)
    except SchemaRegistryError as exc:
        if exc.code == SUBJECT_NOT_FOUND:
            return [], []
        raise
    try:
        live = registry.versions(subject)
    except SchemaRegistryError as exc:
        if exc.code != SUBJECT_NOT_FOUND:  # every version soft-deleted
            raise
        live = []
    return every, live


def _sync(source: Snapshot, destination: Snapshot, result: SubjectSync) -> None:
    subject, there = result.subject, destination.registry
    source_every, source_live = source.versions(subject)
    there_every, there_live = destination.versions(subject)
    if source_every and there.mode(subject) != IMPORT:
        there.set_mode(IMPORT, subject, force=bool(there_every))
    for number in source_every:
        if not _follow(source, destination, result, number, there_every, there_live):
            break  # later versions may build on this one: they wait
        result.versions.append(number)
    _follow_deletes(source, destination, result, there_every, there_live)
    if source_every:
        _follow_compatibility(source.registry, destination, result)
    if result.registered or result.soft_deleted or result.deleted:
        log.info(
            "Schema subject %s: registered %s, soft-deleted %s, deleted %s",
            subject,
            result.registered or "none",
            result.soft_deleted or "none",
            result.deleted or "none",
        )


def _follow_compatibility(
    source: SchemaRegistry, destination: Snapshot, result: SubjectSync
) -> None:
    """The subject's compatibility level on the source (its own or the source registry's) given
    to it on the destination, where it decides what producers may register once the subject is
    promoted (IMPORT mode checks nothing)."""
    subject, there = result.subject, destination.registry
    level = source.compatibility(subject)
    if destination.levels.get(subject) != level and there.compatibility(subject) != level:
        there.set_compatibility(level, subject)
        result.compatibility_set = True
        log.info("Schema subject %s: compatibility %s on the destination too", subject, level)
    result.compatibility = level


def _follow_deletes(
    source: Snapshot,
    destination: Snapshot,
    result: SubjectSync,
    there_every: list[int],
    there_live: list[int],
) -> None:
    """Versions soft-deleted on the source are soft-deleted on the destination, and those
    deleted there for good too, once the source itself confirms it (not a listing)."""
    subject, there = result.subject, destination.registry
    source_every, source_live = source.versions(subject)
    soft = [n for n in result.versions if n not in source_live and n in there_live]
    gone = [] if result.conflicts else sorted(set(there_every) - set(source_every))
    if not (soft or gone):
        return
    source_every, source_live = source.confirm(subject)
    for number in soft:
        if number not in source_live:
            there.delete_version(subject, number)
            result.soft_deleted.append(number)
    for number in gone:
        if number in source_every:
            continue
        if number in there_live:  # deleted for good on the source: soft first, as Kafka's rule
            there.delete_version(subject, number)
        there.delete_version(subject, number, permanent=True)
        result.deleted.append(number)


def _follow(
    source: Snapshot,
    destination: Snapshot,
    result: SubjectSync,
    number: int,
    there_every: list[int],
    there_live: list[int],
) -> bool:
    """Source version `number` on the destination under its id, registered if missing; False
    (a conflict noted) where the destination holds something else."""
    wanted = source.version(result.subject, number)
    if number in there_every:
        have = destination.version(result.subject, number)
        if have.id == wanted.id and same_schema(have.schema, wanted.schema):
            return True
        result.conflicts.append(
            f"version {number} is id {have.id} on the destination and id {wanted.id} on the "
            "source, with a different schema: left as it is"
        )
        return False
    clash = _clash(destination, wanted)
    if clash:
        result.conflicts.append(clash)
        return False
    destination.registry.register(source.whole(result.subject, number))
    destination.add(wanted)
    result.registered.append(number)
    there_every.append(number)
    there_live.append(number)
    return True


def _clash(destination: Snapshot, wanted: SchemaVersion) -> str:
    """Why `wanted` cannot take its id on the destination ("" if it can)."""
    there = destination.by_id.get(wanted.id)
    if there is None or (
        same_schema(there.schema, wanted.schema) and there.schema_type == wanted.schema_type
    ):
        return ""
    return (
        f"id {wanted.id} (version {wanted.version} on the source) is a different schema on the "
        "destination: left as it is; the subject's later versions wait"
    )
