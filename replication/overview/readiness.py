"""DR readiness: per link and mirror, how far behind it is now against the link's RPO target,
what the last verification found, whether a promote could go ahead (caught up, its consumer
groups' offsets synced, its schemas synced: each yes or no, with why), and the link's drills
(`replication/scenarios/drills.py`): the last one's time and result, the one under way, the
schedule. The readiness page, the API and `/metrics` show these values.

Read from the database and Redis only, as the overview is (the lag as the beat last read it,
`lag.latest`; the syncers' last word): a page of a hundred links asks no cluster."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import F, Max, Prefetch, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber

from replication.cutover import promote
from replication.models import (
    ClusterLink,
    DrillRun,
    DrillSchedule,
    GroupOffsetSync,
    MirrorTopic,
    SchemaSubjectSync,
    Verification,
    is_canary,
)
from replication.observe import lag, rpo
from replication.observe.lag import Reading
from replication.schemas import schema_links
from replication.topics import offset_sync

# A lag reading older than this says nothing of now (the beat reads every mirror every 10 s).
STALE_S = 60
HISTORY = 5  # drills listed per link (each has a page of its own)
FINISHED = (DrillRun.Outcome.PASSED, DrillRun.Outcome.FAILED)


@dataclass(frozen=True)
class Check:
    """One promote precondition: whether it holds, and why (or why not) in words."""

    met: bool
    why: str


@dataclass(frozen=True)
class MirrorReadiness:
    mirror: MirrorTopic
    lag_ms: int  # its largest partition's lag in time as last read; -1 unknown
    records_behind: int  # -1 unknown
    read_at: float | None  # when its lag was read (seconds since the epoch)
    over_target: bool
    verified_at: datetime | None  # the last comparison with its source, asked for or not
    differing_records: int  # what any verification found differing, kept on the mirror
    verification: str  # in words
    caught_up: Check
    groups_synced: Check
    schemas_synced: Check

    @property
    def checks(self) -> list[tuple[str, Check]]:
        return [
            ("caught up", self.caught_up),
            ("consumer groups synced", self.groups_synced),
            ("schemas synced", self.schemas_synced),
        ]

    @property
    def ready(self) -> bool:
        return all(check.met for _, check in self.checks)


@dataclass(frozen=True)
class LinkReadiness:
    link: ClusterLink
    target_s: int | None
    rpo_ms: int  # its mirrors' largest lag in time now; -1 unknown (or no mirror)
    breached_since: datetime | None
    mirrors: list[MirrorReadiness]
    last_drill: DrillRun | None  # the last one that finished (passed or failed)
    running_drill: DrillRun | None
    drills: list[DrillRun]  # the latest, refused ones too
    schedule: DrillSchedule | None

    @property
    def over_target(self) -> bool:
        return rpo.is_over(self.rpo_ms, self.target_s)

    @property
    def ready(self) -> int:
        return sum(m.ready for m in self.mirrors)


def readiness(links: list[ClusterLink] | None = None) -> list[LinkReadiness]:
    """Every link's readiness (or the given links'), by destination and name: a few queries
    whatever the number of links and mirrors (the page asks every 5 s)."""
    rows = ClusterLink.objects.select_related("destination", "drill_schedule").prefetch_related(
        Prefetch("mirrors", MirrorTopic.objects.select_related("destination")),
        "group_syncs",
        "schema_syncs",
    )
    if links is not None:
        rows = rows.filter(pk__in=[link.pk for link in links])
    found = list(rows)
    recent: dict[int, list[DrillRun]] = {link.pk: [] for link in found}
    for run in _recent_drills(found):
        recent[run.link_id].append(run)
    last = {run.link_id: run for run in last_drills(found)}
    mirrors = [m for link in found for m in link.mirrors.all()]
    asked = _last_verifications(mirrors)
    return [link_readiness(link, recent[link.pk], last.get(link.pk), asked) for link in found]


def link_readiness(
    link: ClusterLink,
    drills: list[DrillRun] | None = None,
    last_drill: DrillRun | None = None,
    asked: dict[int, Verification] | None = None,
) -> LinkReadiness:
    """One link's readiness (its mirrors, their checks, its drills); `readiness` gives it the
    drills and verifications it read for all links at once."""
    if drills is None:
        return readiness([link])[0]
    readings = lag.latest(link)
    mirrors = [
        mirror
        for mirror in link.mirrors.all()
        if mirror.state != MirrorTopic.State.STOPPED and not is_canary(link, mirror.mirror_topic)
    ]
    asked = asked or {}
    groups = list(link.group_syncs.all())
    subjects = {s.subject: s for s in link.schema_syncs.all()}
    found = [
        _mirror(link, m, readings.get(m.mirror_topic), asked.get(m.pk), groups, subjects)
        for m in mirrors
    ]
    known = [m.lag_ms for m in found if m.lag_ms >= 0]
    return LinkReadiness(
        link=link,
        target_s=link.rpo_target_seconds,
        rpo_ms=max(known) if known and len(known) == len(found) else -1,
        breached_since=link.rpo_breached_at,
        mirrors=found,
        last_drill=last_drill,
        running_drill=next((d for d in drills if d.outcome == DrillRun.Outcome.RUNNING), None),
        drills=drills,
        schedule=schedule_of(link),
    )


def _recent_drills(links: list[ClusterLink]) -> QuerySet[DrillRun]:
    """Each link's latest HISTORY drills, in one query."""
    numbered = DrillRun.objects.filter(link__in=links).annotate(
        n=Window(
            RowNumber(),
            partition_by=[F("link_id")],
            order_by=[F("started_at").desc(), F("id").desc()],
        )
    )
    return numbered.filter(n__lte=HISTORY).order_by("link_id", "-started_at", "-id")


def last_drills(links: list[ClusterLink] | None = None) -> QuerySet[DrillRun]:
    """Each link's (or each of `links`') last drill that finished, passed or failed, in one
    query: the latest row of each (a link's drills run one at a time)."""
    finished = DrillRun.objects.filter(outcome__in=FINISHED)
    if links is not None:
        finished = finished.filter(link__in=links)
    latest = finished.values("link_id").annotate(last=Max("pk")).values("last")
    return DrillRun.objects.filter(pk__in=Subquery(latest))


def schedule_of(link: ClusterLink) -> DrillSchedule | None:
    try:
        return link.drill_schedule
    except ObjectDoesNotExist:
        return None


def _last_verifications(mirrors: list[MirrorTopic]) -> dict[int, Verification]:
    """Each mirror's last verification asked for that finished: one row per mirror."""
    done = Verification.objects.filter(mirror__in=mirrors, finished_at__isnull=False)
    latest = done.values("mirror_id").annotate(last=Max("pk")).values("last")
    return {v.mirror_id: v for v in Verification.objects.filter(pk__in=Subquery(latest))}


def _mirror(
    link: ClusterLink,
    mirror: MirrorTopic,
    reading: Reading | None,
    asked: Verification | None,
    groups: list[GroupOffsetSync],
    subjects: dict[str, SchemaSubjectSync],
) -> MirrorReadiness:
    lag_ms = reading.max_lag_ms if reading is not None else -1
    swept = (mirror.verification or {}).get("at")
    times = [t for t in (asked.finished_at if asked else None, _datetime(swept)) if t is not None]
    return MirrorReadiness(
        mirror=mirror,
        lag_ms=lag_ms,
        records_behind=reading.total if reading is not None else -1,
        read_at=reading.at if reading is not None else None,
        over_target=rpo.is_over(lag_ms, link.rpo_target_seconds),
        verified_at=max(times) if times else None,
        differing_records=mirror.differing_records,
        verification=_verification_words(mirror, asked, bool(times)),
        caught_up=caught_up(mirror, reading),
        groups_synced=groups_synced(link, mirror, groups),
        schemas_synced=schemas_synced(link, mirror, subjects),
    )


def _datetime(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)


def _verification_words(mirror: MirrorTopic, asked: Verification | None, compared: bool) -> str:
    if not compared:
        return "Never compared with its source yet."
    if mirror.differing_records:
        return (
            f"Found {mirror.differing_records:,} record{_s(mirror.differing_records)} differing "
            "from the source: it is not an exact copy (its page lists them)."
        )
    if asked is not None and asked.state == Verification.State.FAILED:
        return f"The last verification asked for failed: {asked.error}"
    return "Identical to its source as far as compared."


def caught_up(mirror: MirrorTopic, reading: Reading | None, now: float | None = None) -> Check:
    """Whether a promote would find the mirror caught up, from its last lag reading (promote
    itself reads both clusters again)."""
    if refused := promote.state_refusal(promote.PROMOTE, mirror):
        return Check(False, refused)
    if reading is None:
        return Check(False, "Its lag has not been read yet: the beat reads it every 10 s.")
    age = (now or time.time()) - reading.at
    if age > STALE_S:
        return Check(
            False,
            f"Its lag was last read {rpo.seconds(int(age * 1000))} ago, too long to say: is the "
            "Celery beat running?",
        )
    if reading.errors:
        return Check(False, f"Its lag could not be read whole: {'; '.join(reading.errors)}")
    missing = sorted(set(range(mirror.num_partitions)) - set(reading.partitions))
    if missing:
        return Check(
            False, f"The lag of partition{_s(len(missing))} {_listed(missing)} is unknown."
        )
    behind = [(n, p) for n, p in sorted(reading.partitions.items()) if p.lag > 0]
    if behind:
        said = ", ".join(
            f"partition {n} lags {p.lag:,} record{_s(p.lag)}"
            + (f" ({rpo.seconds(p.lag_ms)})" if p.lag_ms >= 0 else "")
            for n, p in behind[:5]
        )
        more = f" and {len(behind) - 5} more" if len(behind) > 5 else ""
        return Check(False, f"Not caught up: {said}{more}.")
    return Check(True, f"Lag 0 on every partition, read {rpo.seconds(int(age * 1000))} ago.")


def groups_synced(link: ClusterLink, mirror: MirrorTopic, groups: list[GroupOffsetSync]) -> Check:
    """Whether the consumer groups reading the mirror's source have their offsets on the
    destination, by the offset syncer's last run."""
    if not offset_sync.enabled(link):
        return Check(
            False,
            f"Consumer offset sync is off on link {link.name} (consumer.offset.sync.enable): "
            "consumers moved to the mirror would start from their auto.offset.reset.",
        )
    if problem := link.sync_problems.get(offset_sync.PROBLEM):
        return Check(False, f"Consumer offset sync cannot do its work: {problem}")
    ours = [g for g in groups if mirror.mirror_topic in g.topics]
    if not ours:
        return Check(True, "No consumer group has synced offsets on it: none to move.")
    behind = [g for g in ours if g.state != GroupOffsetSync.State.IN_STEP]
    if behind:
        said = ", ".join(
            f"{g.group} ({g.get_state_display().lower().replace('_', ' ')}"
            + (f": {g.reason}" if g.reason else "")
            + ")"
            for g in behind[:5]
        )
        more = f" and {len(behind) - 5} more" if len(behind) > 5 else ""
        return Check(False, f"Not in step: {said}{more}.")
    return Check(True, f"{len(ours)} group{_s(len(ours))} in step on the destination.")


def schemas_synced(
    link: ClusterLink, mirror: MirrorTopic, subjects: dict[str, SchemaSubjectSync]
) -> Check:
    """Whether the schemas of the mirror's records are on the destination's registry, by the
    schema syncer's last run."""
    if not schema_links.enabled(link):
        return Check(
            True,
            "Schema sync is off on this link: nothing to wait for (if its records use a "
            "registry's schemas, turn schema.sync.enable on).",
        )
    if problem := link.sync_problems.get(schema_links.PROBLEM):
        return Check(False, f"Schema sync cannot do its work: {problem}")
    if link.schemas_synced_at is None:
        return Check(False, "Schema sync has not run yet.")
    ours = [subjects[s] for s in schema_links.topic_subjects(mirror.source_topic) if s in subjects]
    wrong = [
        s
        for s in ours
        if s.state in (SchemaSubjectSync.State.CONFLICT, SchemaSubjectSync.State.FAILED)
    ]
    if wrong:
        said = "; ".join(f"{s.subject} {s.state}: {s.message}" for s in wrong)
        return Check(False, f"Not in step: {said}")
    if not ours:
        return Check(True, "Its topic has no subject in the source's registry.")
    return Check(True, f"{_listed([s.subject for s in ours])} in step.")


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _listed(items: list) -> str:
    return ", ".join(str(i) for i in items)
