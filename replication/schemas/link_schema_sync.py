"""A run of a link's schema sync (`sync_link_schemas`, run by the syncers when
`schema.sync.enable=true`): the subjects `schema_links` picks, brought in step by
`subject_sync`; the ids a mirrored record waits for (`spark_jobs.schema_gate`) synced at once,
with the subjects that hold them (`sync_link_schemas(link, ids)`, run by the syncers each second
while a partition waits). The outcome is kept per subject (`SchemaSubjectSync`) for the link's
page, and what the run changed is audited.
"""

from __future__ import annotations

from django.utils import timezone

from infra.registry_http import SchemaRegistryError
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ClusterLink, SchemaSubjectSync
from replication.schemas.schema_links import holding, promoted, registries, subjects_of
from replication.schemas.subject_promotion import make_writable
from replication.schemas.subject_sync import Snapshot, SubjectSync, sync_read

_SYNCER = audit.Actor.system("schema sync")


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
            make_writable(link, destination, sorted(held))
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
