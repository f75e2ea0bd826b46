"""A link's DR readiness on the API: GET …/links/{link_name}/readiness (*Isthmus*)."""

from __future__ import annotations

from datetime import datetime

from console.api.base import cluster, endpoint, self_url
from console.api.schemas import (
    DrillData,
    DrillScheduleData,
    DrillStepData,
    LinkReadinessData,
    MirrorReadinessData,
    PreconditionData,
    respond,
)
from replication.models import DrillRun
from replication.overview import readiness
from replication.overview.readiness import Check
from replication.topics.links import get_link


@endpoint(GET="console.view")
def link_readiness(request, cluster_id, link_name):
    found = readiness.link_readiness(get_link(cluster(cluster_id), link_name))
    link, schedule = found.link, found.schedule
    path = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/readiness"
    return respond(
        LinkReadinessData(
            metadata=self_url(request, path),
            link_name=link.name,
            link_state=link.state,
            rpo_target_seconds=found.target_s,
            rpo_lag_ms=_known(found.rpo_ms),
            rpo_breached_since=_at(found.breached_since),
            mirrors=[
                MirrorReadinessData(
                    mirror_topic_name=m.mirror.mirror_topic,
                    lag_ms=_known(m.lag_ms),
                    records_behind=_known(m.records_behind),
                    over_rpo_target=m.over_target,
                    last_verified_at=_at(m.verified_at),
                    differing_records=m.differing_records,
                    verification=m.verification,
                    caught_up=_check(m.caught_up),
                    consumer_groups_synced=_check(m.groups_synced),
                    schemas_synced=_check(m.schemas_synced),
                    ready=m.ready,
                )
                for m in found.mirrors
            ],
            last_drill=_drill(found.last_drill),
            running_drill=_drill(found.running_drill),
            drill_schedule=DrillScheduleData(
                enabled=bool(schedule and schedule.enabled),
                every_hours=schedule.every_hours if schedule else None,
                next_due=_at(schedule.next_due) if schedule else None,
            ),
            drills=[d for run in found.drills if (d := _drill(run)) is not None],
        )
    )


def _drill(run: DrillRun | None) -> DrillData | None:
    if run is None:
        return None
    return DrillData(
        id=run.pk,
        outcome=run.outcome,  # type: ignore[arg-type]
        started_by=run.started_by,
        canary=run.canary or None,
        started_at=run.started_at.isoformat(),
        finished_at=_at(run.finished_at),
        seconds=run.seconds,
        failover_seconds=run.failover_seconds,
        failback_seconds=run.failback_seconds,
        way_back=run.way_back or None,  # type: ignore[arg-type]
        words=run.words or None,
        cleanup=run.cleanup or None,
        steps=[DrillStepData(**step) for step in run.steps],
    )


def _check(check: Check) -> PreconditionData:
    return PreconditionData(met=check.met, why=check.why)


def _known(value: int) -> int | None:
    return value if value >= 0 else None


def _at(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
