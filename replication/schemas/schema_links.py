"""Schema linking: subjects copied from a source registry to a destination registry with the
same ids and versions, so that records, which name their schema by id, decode on both sides.

`sync_subjects` (`sync_read` on registries read once) brings each subject on the destination
in step with the source:
- the subject is put in IMPORT mode on the destination (which keeps the ids and versions it is
  given, and takes no schema from producers without them);
- every version the source has (soft-deleted ones too) is registered under its own id and
  version, oldest first, after the subjects it references (so references resolve);
- a version soft-deleted on the source is soft-deleted on the destination; one deleted for good
  on the source is deleted for good there too;
- an id the destination already gives a different schema is a conflict: reported, never
  overwritten, and the subject's later versions wait behind it (they may build on it).

What it did is returned per subject. For a link (`sync_link_schemas`, run by the syncers
when `schema.sync.enable=true`):
- the subjects are those `schema.subjects` selects, by default its mirrors' (`<source
  topic>-key` and `-value`, as Confluent's TopicNameStrategy names them), that the source's
  registry holds; a promoted mirror's subjects are no longer synced;
- the registries are those of the link's two clusters, the destination's in `schema.context`
  and the source's in `schema.source.context` if they are set (a bidirectional link's other
  half reads from the context this half syncs into);
- the ids a mirrored record waits for (`spark_jobs.schema_gate`) are synced at once, with the
  subjects that hold them (`sync_link_schemas(link, ids)`, run by the syncers each second
  while a partition waits);
- the outcome is kept per subject (`SchemaSubjectSync`) for the link's page.

Promote and failover take the subjects along (`release_subjects`): the promoted topic's
subjects leave IMPORT mode on the destination, so its producers can register new versions
there. When the topic is mirrored again (a failback), the link's sync puts them back in IMPORT.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from infra.registry_http import SchemaRegistryError
from infra.schema_registry import SUBJECT_NOT_FOUND, SchemaRegistry, SchemaVersion
from infra.schema_text import same_schema
from replication.core.errors import ReplicationError, conflict
from replication.governance import audit
from replication.models import ClusterLink, KafkaCluster, MirrorTopic, SchemaSubjectSync
from spark_jobs import control

log = logging.getLogger(__name__)

IMPORT, READWRITE = "IMPORT", "READWRITE"
PROBLEM = "schemas"  # the syncer's name where the link notes what stops it
_SYNCER = audit.Actor.system("schema sync")


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
        # source's stays the same (a promote checks them: `_make_writable`).
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


# --- a link's schemas ---------------------------------------------------------------------


def enabled(link: ClusterLink) -> bool:
    return link.config("schema.sync.enable") == "true"


def _source_cluster(link: ClusterLink) -> KafkaCluster:
    source = (
        KafkaCluster.objects.filter(cluster_id=link.source_cluster_id)
        .exclude(schema_registry_url="")
        .order_by("pk")
        .first()
    )
    if source is None:
        raise ReplicationError(
            f"The link's source cluster ({link.source_cluster_id}) has no schema registry "
            "here: register the cluster with its registry on the Clusters page (or set one on "
            "its page) to sync its schemas."
        )
    return source


def registries(link: ClusterLink) -> tuple[SchemaRegistry, SchemaRegistry]:
    """The schema registries of the link's source and destination clusters, each in the
    link's schema context for it."""
    source = _source_cluster(link).schema_registry(link.config("schema.source.context") or "")
    destination = link.destination.schema_registry(link.config("schema.context") or "")
    if destination is None:
        raise ReplicationError(
            f"Cluster {link.destination.name} has no schema registry: set one on its page to "
            "sync schemas into it."
        )
    assert source is not None  # _source_cluster has a registry
    return source, destination


def engine_spec(link: ClusterLink) -> control.SchemaSpec | None:
    """What the engine needs to hold records until their schemas arrive (see
    `spark_jobs.schema_gate`): both registries, or None when the link syncs no schemas."""
    if not enabled(link):
        return None
    try:
        source = _source_cluster(link).schema_registry_spec(
            link.config("schema.source.context") or ""
        )
    except ReplicationError:
        return None  # the sync says what is missing; records cannot wait for it
    destination = link.destination.schema_registry_spec(link.config("schema.context") or "")
    if source is None or destination is None:  # (the source has one: see _source_cluster)
        return None
    return {"source": source, "destination": destination}


def selects(filters: str, subject: str) -> bool:
    """Whether `schema.subjects` (names, prefixes ending in *) selects a subject."""
    return any(
        subject.startswith(f[:-1]) if f.endswith("*") else subject == f for f in filters.split(",")
    )


def topic_subjects(topic: str) -> tuple[str, str]:
    return (f"{topic}-key", f"{topic}-value")


def _topics_subjects(mirrors) -> set[str]:
    return {s for t in mirrors.values_list("source_topic", flat=True) for s in topic_subjects(t)}


def promoted(link: ClusterLink) -> set[str]:
    """The subjects the link syncs no more: those of its promoted (STOPPED) mirrors, and those
    made writable on their own (PROMOTED), unless a mirror of theirs follows its source again
    (a failback: it takes them back into IMPORT mode)."""
    stopped = link.mirrors.filter(state=MirrorTopic.State.STOPPED)
    following = link.mirrors.exclude(state=MirrorTopic.State.STOPPED)
    rows = link.schema_syncs.filter(state=SchemaSubjectSync.State.PROMOTED)
    made_writable = set(rows.values_list("subject", flat=True))
    return (made_writable - _topics_subjects(following)) | _topics_subjects(stopped)


def subjects_of(link: ClusterLink, source: Snapshot, left_out: set[str]) -> list[str]:
    """The subjects `schema.subjects` selects (by default the link's mirrors') that the
    source's registry holds, but those `left_out` (the promoted ones)."""
    held = source.subjects()
    filters = link.config("schema.subjects")
    if filters:
        picked = {s for s in held if selects(filters, s)}
    else:
        picked = _topics_subjects(link.mirrors.exclude(state=MirrorTopic.State.STOPPED))
    return sorted((picked & held) - left_out)


def holding(source: SchemaRegistry, ids: list[int]) -> list[str]:
    """The subjects of the source's that hold these schema ids."""
    return sorted({s for i in ids for s in source.id_subjects(i)})


def sync_link_schemas(link: ClusterLink, ids: list[int] | None = None) -> list[SubjectSync]:
    """Sync the link's subjects (only those holding `ids`, if given) and keep how each
    stands; a ReplicationError says what stops the whole of it (a registry missing or not
    answering)."""
    source, destination = registries(link)
    left_out = promoted(link)
    try:
        read = Snapshot(source)
        if ids:
            subjects = [s for s in holding(source, ids) if s not in left_out]
        else:
            subjects = subjects_of(link, read, left_out)
        levels = dict(link.schema_syncs.values_list("subject", "compatibility"))
        done = sync_read(read, Snapshot(destination, levels), subjects)
        if not ids:  # a promoted subject whose registry did not answer at the promote
            rows = link.schema_syncs.filter(state=SchemaSubjectSync.State.PROMOTED)
            held = rows.filter(subject__in=left_out).values_list("subject", flat=True)
            _make_writable(link, destination, sorted(held))
    except SchemaRegistryError as exc:
        raise ReplicationError(str(exc)) from exc
    _keep(link, done, whole=not ids)
    changed = {d.subject: _changes(d) for d in done if _changes(d)}
    if changed:
        audit.record(_SYNCER, "link.schema_sync", f"link {link.name}", after=changed)
    return done


def _keep(link: ClusterLink, done: list[SubjectSync], whole: bool) -> None:
    """Keep each subject's outcome (a few queries for any number of subjects); after a whole
    run, forget the subjects it no longer syncs (but the promoted ones, which say so)."""
    now = timezone.now()
    rows = {r.subject: r for r in link.schema_syncs.all()}
    made, changed = [], []
    for result in done:
        state, message = _outcome(result)
        moved = bool(_changes(result))
        kept = (state, message, result.versions, result.compatibility)
        row = rows.get(result.subject)
        if row is None:
            made.append(
                SchemaSubjectSync(
                    link=link,
                    subject=result.subject,
                    state=state,
                    message=message,
                    versions=result.versions,
                    compatibility=result.compatibility,
                    synced_at=now,
                    changed_at=now,
                )
            )
        elif moved or (row.state, row.message, row.versions, row.compatibility) != kept:
            row.state, row.message, row.versions, row.compatibility = kept
            row.changed_at = now if moved else row.changed_at
            changed.append(row)
    # (ignore_conflicts: a run of the ids records wait for may have kept one meanwhile)
    SchemaSubjectSync.objects.bulk_create(made, ignore_conflicts=True)
    SchemaSubjectSync.objects.bulk_update(
        changed, ["state", "message", "versions", "compatibility", "changed_at"]
    )
    link.schema_syncs.filter(subject__in=[d.subject for d in done]).update(synced_at=now)
    if whole:
        SchemaSubjectSync.objects.filter(link=link).exclude(
            subject__in=[d.subject for d in done]
        ).exclude(state=SchemaSubjectSync.State.PROMOTED).delete()


def _changes(result: SubjectSync) -> dict:
    """What the run changed of the subject on the destination (the audit's words)."""
    done = {
        "registered": result.registered,
        "soft_deleted": result.soft_deleted,
        "deleted": result.deleted,
        "compatibility": result.compatibility if result.compatibility_set else "",
    }
    return {k: v for k, v in done.items() if v}


def _outcome(result: SubjectSync) -> tuple[str, str]:
    if result.error:
        return SchemaSubjectSync.State.FAILED, result.error
    if result.conflicts:
        return SchemaSubjectSync.State.CONFLICT, "; ".join(result.conflicts)
    return SchemaSubjectSync.State.IN_STEP, ""


def sync_soon(actor: audit.Actor, link: ClusterLink) -> None:
    """Ask for a whole sync run now (the beat's syncers start it within a second)."""
    action, target = "link.schema_sync_requested", f"link {link.name}"
    with audit.refusals(actor, action, target):
        if not enabled(link):
            raise conflict(
                f"Link {link.name} does not sync schemas: set schema.sync.enable=true on it first."
            )
        ClusterLink.objects.filter(pk=link.pk).update(schemas_synced_at=None)
        audit.record(actor, action, target)


@dataclass(frozen=True)
class SchemaSyncStatus:
    """How a link's schema sync stands: what the link page, the API, the CLI and /metrics show."""

    enabled: bool
    interval_ms: int
    subject_filters: str  # "" for the mirrors' subjects
    context: str  # the destination's, "" for the default context
    source_context: str  # the source's, likewise
    synced_at: datetime | None
    problem: str  # what stops it, "" when nothing does
    subjects: list[SchemaSubjectSync]


def status(link: ClusterLink) -> SchemaSyncStatus:
    return SchemaSyncStatus(
        enabled(link),
        link.int_config("schema.sync.ms"),
        link.config("schema.subjects") or "",
        link.config("schema.context") or "",
        link.config("schema.source.context") or "",
        link.schemas_synced_at,
        link.sync_problems.get(PROBLEM, ""),
        list(link.schema_syncs.all()),
    )


# --- promote: the subjects go along -------------------------------------------------------


def release_subjects(mirrors: list[MirrorTopic], actor: audit.Actor) -> None:
    """The mirrors were promoted (or failed over): their subjects on the destination leave
    IMPORT mode, so producers can register new versions there, and are no longer synced. A
    registry that does not answer now is tried again at each sync run; the topics stay
    promoted whatever happens here."""
    for mirror in mirrors:
        link = mirror.link
        if not enabled(link):
            continue
        rows = link.schema_syncs.filter(subject__in=topic_subjects(mirror.source_topic))
        subjects = sorted(rows.values_list("subject", flat=True))
        if subjects:
            _promote(actor, link, subjects, {"topic": mirror.mirror_topic})


def promote_subjects(
    actor: audit.Actor, link: ClusterLink, subjects: list[str], *, validate_only: bool = False
) -> str:
    """Make synced subjects writable on the destination and sync them no more, as a promote
    does a topic's (the approvals' `promote-subjects`: for subjects no topic's promote takes
    along, referenced ones say); what was done, in words."""
    if not enabled(link):
        raise conflict(
            f"Link {link.name} does not sync schemas: there are no synced subjects to promote."
        )
    if not subjects:
        raise ReplicationError("Name at least one schema subject the link syncs.")
    rows = link.schema_syncs.exclude(state=SchemaSubjectSync.State.PROMOTED)
    known = set(rows.filter(subject__in=subjects).values_list("subject", flat=True))
    unknown = [s for s in subjects if s not in known]
    if unknown:
        raise ReplicationError(
            f"Link {link.name} does not sync {', '.join(unknown[:5])}"
            f"{' and more' if len(unknown) > 5 else ''} (or promoted it already): name subjects "
            "its page lists as synced. Nothing was changed."
        )
    if not validate_only:
        _promote(actor, link, sorted(known), {})
    return f"Made writable on the destination: {', '.join(sorted(known))}."


def _promote(actor: audit.Actor, link: ClusterLink, subjects: list[str], why: dict) -> None:
    link.schema_syncs.filter(subject__in=subjects).update(
        state=SchemaSubjectSync.State.PROMOTED, message=_NOT_WRITABLE_YET, changed_at=timezone.now()
    )
    audit.record(
        actor, "schema.subjects_promoted", f"link {link.name}", after={**why, "subjects": subjects}
    )
    try:
        _make_writable(link, registries(link)[1], subjects)
    except (ReplicationError, SchemaRegistryError) as exc:
        log.warning("Subjects %s stay in IMPORT mode for now: %s", ", ".join(subjects), exc)


_NOT_WRITABLE_YET = (
    "Promoted with its topic; still in IMPORT mode on the destination (its registry did not "
    "answer): tried again at each sync."
)
_WRITABLE = "Promoted with its topic: writable on the destination, no longer synced."


def _make_writable(link: ClusterLink, destination: SchemaRegistry, subjects: list[str]) -> None:
    """The subjects READWRITE on the destination, each with the compatibility level the sync
    last gave it (each promoted subject's mode is read at every whole run: one a registry did
    not answer for at the promote is made writable then)."""
    rows = link.schema_syncs.filter(subject__in=subjects)
    levels = dict(rows.values_list("subject", "compatibility"))
    for subject in subjects:
        if destination.mode(subject) == READWRITE:
            continue
        level = levels.get(subject)
        if level and destination.compatibility(subject) != level:  # changed there by hand
            destination.set_compatibility(level, subject)
        destination.set_mode(READWRITE, subject)
        log.info("Schema subject %s is writable on the destination now (promoted)", subject)
    rows.exclude(message=_WRITABLE).update(message=_WRITABLE)
