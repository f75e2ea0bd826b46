"""DR drills: a failover and fail back of a canary topic of the drill's own on a link, never a
user's topic, run step by step as the scenarios run (`drill_steps.py`), on the scenario
worker's queue; each run kept with its steps' times and words (`DrillRun`), and started on
the link's schedule (`DrillSchedule`, the beat's `start_due`) or by an operator now.

A drill never runs twice at once on one link: the database refuses a second RUNNING row
(`one_running_drill_per_link`), and one no worker finished within ABANDONED_AFTER ends FAILED
so the next can start. It is refused, in words, on a link that is not ACTIVE (paused, failed,
its source unavailable), whose source cluster the console has not registered (the canary is
made through the console's own connection to it), or whose canary's name cannot be made."""

from __future__ import annotations

import logging
import re
import time
from datetime import timedelta

from celery import current_app
from django.db import IntegrityError, transaction
from django.utils import timezone

from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError, conflict
from replication.governance import audit
from replication.models import CANARY_PREFIX, ClusterLink, DrillRun, DrillSchedule, KafkaCluster
from replication.scenarios import drill_steps
from replication.scenarios.runner import StepFailed

log = logging.getLogger(__name__)

ABANDONED_AFTER = timedelta(minutes=30)
MAX_HOURS = 8760  # a year
SCHEDULE = audit.Actor.system("drill schedule")
MAX_TOPIC = 249  # Kafka's longest topic name
Outcome = DrillRun.Outcome


def canary_name(link: ClusterLink) -> str:
    """The canary's name on the link's source (on the destination, with the link's prefix)."""
    name = CANARY_PREFIX + link.name
    mirror = link.prefix + name
    if len(mirror) > MAX_TOPIC or not re.fullmatch(r"[a-zA-Z0-9._-]+", mirror):
        raise ReplicationError(
            f"The drill's canary topic on link {link.name} would be named {mirror[:80]!r}, "
            f"which Kafka does not take ({len(mirror)} characters; at most {MAX_TOPIC} of "
            "letters, digits, '.', '_' and '-'): give the link a shorter name or prefix to "
            "drill it. Nothing was started."
        )
    return name


def refusal(link: ClusterLink) -> str:
    """Why a drill of `link` cannot start now ("" when it can)."""
    reasons: dict[str, str] = {
        ClusterLink.State.PAUSED: "resume it, then drill",
        ClusterLink.State.UNAVAILABLE: "its source cluster does not answer; drill once it does",
        ClusterLink.State.FAILED: "its stream failed (its page says why); drill once it runs",
    }
    if link.state in reasons:
        return (
            f"Link {link.name} is {link.state}: a drill fails a canary over and back on a "
            f"running link; {reasons[link.state]}. Nothing was started."
        )
    if _source(link) is None:
        return (
            f"The source cluster of link {link.name} ({link.source_cluster_id}) is not "
            "registered: the drill makes its canary topic there through the console's own "
            "connection. Register it on the Clusters page, then drill. Nothing was started."
        )
    return ""


def _source(link: ClusterLink) -> KafkaCluster | None:
    return KafkaCluster.objects.filter(cluster_id=link.source_cluster_id).first()


def start(actor: audit.Actor, link: ClusterLink) -> DrillRun:
    """A new RUNNING drill of `link` (audited), or a refusal saying why; `hand_over` runs it."""
    target = f"link {link.name}"
    with audit.refusals(actor, "drill.start", target):
        settle_abandoned()
        link.refresh_from_db()
        if why := refusal(link):
            raise conflict(why)
        canary = canary_name(link)
        try:
            with transaction.atomic():
                run = DrillRun.objects.create(link=link, started_by=actor.name, canary=canary)
        except IntegrityError:
            raise conflict(_under_way(link)) from None
        audit.record(actor, "drill.start", target, after={"drill": run.pk, "canary": canary})
    return run


def _under_way(link: ClusterLink) -> str:
    running = DrillRun.objects.filter(link=link, outcome=Outcome.RUNNING).first()
    since = ""
    if running is not None:
        since = f" (started {running.started_at:%Y-%m-%d %H:%M:%S} UTC by {running.started_by})"
    return (
        f"A drill of link {link.name} is under way{since}: one at a time. Wait until it ends; "
        "the readiness page shows it."
    )


def hand_over(run: DrillRun, user_pk: int | None = None) -> None:
    """Run it on the scenario worker (it waits on the supervision the other worker does)."""
    current_app.send_task("replication.tasks.run_drill", args=[run.pk, user_pk])


def start_due(now=None) -> list[DrillRun]:
    """The beat's: start each enabled schedule's drill that is due, and set its next time (a
    conditional update: two beats at once start it once). A drill the link's state refuses is
    kept as REFUSED, with why."""
    now = now or timezone.now()
    started = []
    due = DrillSchedule.objects.filter(enabled=True, next_due__lte=now).select_related("link")
    for schedule in due:
        taken = DrillSchedule.objects.filter(pk=schedule.pk, next_due=schedule.next_due).update(
            next_due=now + timedelta(hours=schedule.every_hours)
        )
        if not taken:
            continue
        try:
            run = start(SCHEDULE, schedule.link)
        except ReplicationError as exc:
            DrillRun.objects.create(
                link=schedule.link,
                started_by=SCHEDULE.name,
                canary="",
                outcome=Outcome.REFUSED,
                words=str(exc),
                finished_at=now,
            )
            continue
        hand_over(run)
        started.append(run)
    return started


def settle_abandoned() -> None:
    """A drill RUNNING longer than any drill takes ends FAILED: its worker is gone."""
    old = timezone.now() - ABANDONED_AFTER
    DrillRun.objects.filter(outcome=Outcome.RUNNING, started_at__lt=old).update(
        outcome=Outcome.FAILED,
        finished_at=timezone.now(),
        words="No worker finished it within 30 minutes (is the scenario worker running?); the "
        "next drill removes what is left of its canary first.",
    )


def execute(run: DrillRun, actor: audit.Actor) -> DrillRun:
    """Run the drill's steps in order up to the first that fails, then clean up, whatever
    happened; keep each step's time and words, and the failover and fail back times."""
    link = run.link
    source = _source(link)
    if source is None or run.outcome != Outcome.RUNNING:
        return _finish(run, actor, failed=True, words=refusal(link) or "It is not running.")
    drill = drill_steps.Drill(actor, link, source, run.canary, run.pk)
    run.way_back = drill.way_back
    run.save(update_fields=["way_back"])
    words = ""
    leftovers = drill_steps.clean_up(drill)  # an earlier drill's, if it could not clean up
    if leftovers:
        words = f"What an earlier drill left could not be removed: {'; '.join(leftovers)}"
    for step in [] if words else [*drill_steps.STEPS, *drill_steps.WAYS_BACK[drill.way_back]]:
        passed, seen = _run_step(run, step, drill)
        if not passed:
            words = f"{step.name}: {seen}"
            break
    left = drill_steps.clean_up(drill)
    run.cleanup = "; ".join(left)
    return _finish(run, actor, failed=bool(words), words=words)


def _run_step(run: DrillRun, step: drill_steps.DrillStepSpec, drill) -> tuple[bool, str]:
    began = time.monotonic()
    try:
        seen, passed = step.run(drill), True
    except StepFailed as exc:
        seen, passed = str(exc), False
    except (ReplicationError, KafkaAdminError) as exc:
        seen, passed = str(exc), False
    except Exception as exc:  # (any trouble fails the step, and is said)
        log.exception("Drill %s, step %r", run.pk, step.name)
        seen, passed = f"an unexpected error ({type(exc).__name__}); the log has the details", False
    seconds = round(time.monotonic() - began, 2)
    run.steps = [
        *run.steps,
        {"name": step.name, "seconds": seconds, "words": seen, "passed": passed},
    ]
    if step.timing == "failover":
        run.failover_seconds = seconds
    elif step.timing == "failback":
        run.failback_seconds = round((run.failback_seconds or 0) + seconds, 2)
    run.save(update_fields=["steps", "failover_seconds", "failback_seconds"])
    return passed, seen


def _finish(run: DrillRun, actor: audit.Actor, *, failed: bool, words: str) -> DrillRun:
    run.outcome = Outcome.FAILED if failed else Outcome.PASSED
    run.words, run.finished_at = words, timezone.now()
    run.save(update_fields=["outcome", "words", "finished_at", "cleanup"])
    audit.record(
        actor,
        "drill.finish",
        f"link {run.link.name}",
        result=audit.AuditEvent.Result.FAILED if failed else audit.AuditEvent.Result.OK,
        after={
            "drill": run.pk,
            "outcome": run.outcome,
            "failover_seconds": run.failover_seconds,
            "failback_seconds": run.failback_seconds,
            "way_back": run.way_back,
        },
        message=words,
    )
    return run


def parse_hours(value: object) -> int:
    """A schedule's interval as given: a whole number of hours from 1 to a year."""
    text = str(value).strip() if isinstance(value, (str, int)) else ""
    hours = int(text) if re.fullmatch("[0-9]{1,5}", text) else 0
    if not 1 <= hours <= MAX_HOURS:
        raise ReplicationError(
            f"Give how often to drill as a whole number of hours from 1 to {MAX_HOURS:,} (a "
            "year), e.g. 24 for once a day."
        )
    return hours


def set_schedule(actor: audit.Actor, link: ClusterLink, every_hours: int, enabled: bool) -> None:
    """Drill `link` every `every_hours` (or not, `enabled` False), audited. A schedule turned
    on, or given a new interval, is next due that long from now."""
    target = f"link {link.name}"
    with audit.refusals(actor, "drill.schedule", target):
        schedule, _ = DrillSchedule.objects.get_or_create(link=link)
        before = {"every_hours": schedule.every_hours, "enabled": schedule.enabled}
        changed = not schedule.enabled or schedule.every_hours != every_hours
        schedule.every_hours, schedule.enabled = every_hours, enabled
        if not enabled:
            schedule.next_due = None
        elif changed or schedule.next_due is None:
            schedule.next_due = timezone.now() + timedelta(hours=every_hours)
        schedule.save()
        audit.record(
            actor,
            "drill.schedule",
            target,
            before=before,
            after={"every_hours": every_hours, "enabled": enabled},
        )
