"""Schema subjects made writable on the destination. Promote and failover take the subjects
along (`release_subjects`): the promoted topic's subjects leave IMPORT mode on the
destination, so its producers can register new versions there, and the link syncs them no
more; when the topic is mirrored again (a failback), the link's sync puts them back in IMPORT.
`promote_subjects` makes synced subjects writable on their own (the approvals'
`promote-subjects`).
"""

from __future__ import annotations

import logging

from django.utils import timezone

from infra.registry_http import SchemaRegistryError
from infra.schema_registry import SchemaRegistry
from replication.core.errors import ReplicationError, conflict
from replication.governance import audit
from replication.models import ClusterLink, MirrorTopic, SchemaSubjectSync
from replication.schemas.schema_links import enabled, registries, topic_subjects
from replication.schemas.subject_sync import READWRITE

log = logging.getLogger(__name__)


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
        make_writable(link, registries(link)[1], subjects)
    except (ReplicationError, SchemaRegistryError) as exc:
        log.warning("Subjects %s stay in IMPORT mode for now: %s", ", ".join(subjects), exc)


_NOT_WRITABLE_YET = (
    "Promoted with its topic; still in IMPORT mode on the destination (its registry did not "
    "answer): tried again at each sync."
)
_WRITABLE = "Promoted with its topic: writable on the destination, no longer synced."


def make_writable(link: ClusterLink, destination: SchemaRegistry, subjects: list[str]) -> None:
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
