"""A link's schemas: whether it syncs them, the registries of its two clusters, which
subjects it syncs, what the engine needs to hold records until their schemas arrive, and how
its sync stands. For a link with `schema.sync.enable=true`:
- the subjects are those `schema.subjects` selects, by default its mirrors' (`<source
  topic>-key` and `-value`, as Confluent's TopicNameStrategy names them), that the source's
  registry holds; a promoted mirror's subjects are no longer synced (`promoted`);
- the registries are those of the link's two clusters, the destination's in `schema.context`
  and the source's in `schema.source.context` if they are set (a bidirectional link's other
  half reads from the context this half syncs into).

A run of the sync is `link_schema_sync`'s; the subjects a promote takes along,
`subject_promotion`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from infra.schema_registry import SchemaRegistry
from replication.core.errors import ReplicationError, conflict
from replication.governance import audit
from replication.models import ClusterLink, KafkaCluster, MirrorTopic, SchemaSubjectSync
from replication.schemas.subject_sync import Snapshot
from spark_jobs import control

PROBLEM = "schemas"  # the syncer's name where the link notes what stops it


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
