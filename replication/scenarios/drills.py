"""DR drills: a failover and fail back of a canary topic of the drill's own on a link, never a
user's topic, run step by step as the scenarios run (`drill_steps.py`), on the scenario
worker's queue; each run kept with its steps' times and words (`DrillRun`), and started on
the link's schedule (`DrillSchedule`, the beat's `start_due`) or by an operator now.

A drill never runs twice at once on one link: the database refuses a second RUNNING row
(`one_running_drill_per_link`), nor on the two halves of a bidirectional link (`start` checks
the other's under a lease), and one no worker finished within ABANDONED_AFTER ends FAILED so
the next can start. It touches only topics it made (`drill_topics.py`). It is refused, in
words, on a link that is not ACTIVE (paused, failed, its source unavailable), whose source
cluster the console has not registered (the canary is made through the console's own
connection to it)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from celery import current_app
from django.db import IntegrityError, transaction
from django.utils import timezone

from infra.kafka_errors import KafkaAdminError
from replication.core import redis_channel
from replication.core.errors import ReplicationError, conflict
from replication.core.text import whole_number
from replication.governance import audit
from replication.models import (
    ClusterLink,
    DrillRun,
    DrillSchedule,
    KafkaCluster,
    MadeTopic,
    canary_topic,
)
from replication.scenarios import drill_steps, drill_topics
from replication.scenarios.runner import StepFailed
from replication.topics import links

log = logging.getLogger(__name__)

ABANDONED_AFTER = timedelta(minutes=30)
MAX_HOURS = 8760  # a year
SCHEDULE = audit.Actor.system("drill schedule")
Outcome = DrillRun.Outcome


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


def start(actor: audit.Actor, link: ClusterLink, user_pk: int | None = None) -> DrillRun:
    """A new RUNNING drill of `link`, audited with it, handed to the scenario worker once both
    are committed; or a refusal saying why. One at a time on the two halves of a bidirectional
    link (the way back of one works on the other's mirrors): a lease on the pair checks the
    other half's."""
    target = f"link {link.name}"
    with audit.refusals(actor, "drill.start", target):
        settle_abandoned()
        link.refresh_from_db()
        if why := refusal(link):
            raise conflict(why)
        canary = canary_topic(link)  # (within Kafka's 249 characters with any link prefix)
        halves = [link, *([peer] if (peer := links.other_half(link)) is not None else [])]
        pair = min(str(h.link_id) for h in halves)
        with redis_channel.only_one(f"drill:{pair}", _under_way(link), hold_s=30):
            if len(halves) == 2 and _running(halves[1]) is not None:
                raise conflict(_under_way(halves[1]))
            try:
                with transaction.atomic():
                    run = DrillRun.objects.create(link=link, started_by=actor.name, canary=canary)
                    audit.record(
                        actor, "drill.start", target, after={"drill": run.pk, "canary": canary}
                    )
                    transaction.on_commit(lambda: hand_over(run, user_pk))
            except IntegrityError:
                raise conflict(_under_way(link)) from None
    return run


def _running(link: ClusterLink) -> DrillRun | None:
    return DrillRun.objects.filter(link=link, outcome=Outcome.RUNNING).first()


def _under_way(link: ClusterLink) -> str:
    running = _running(link)
    since = ""
    if running is not None:
        since = f" (started {running.started_at:%Y-%m-%d %H:%M:%S} UTC by {running.started_by})"
    return (
        f"A drill of link {link.name} into {link.destination.name} is under way{since}: one at "
        "a time on a link and on the other half of a bidirectional one. Wait until it ends; the "
        "readiness page shows it."
    )


def hand_over(run: DrillRun, user_pk: int | None = None) -> None:
    """Run it on the scenario worker (it waits on the supervision the other worker does). A
    drill the broker does not take ends FAILED, saying so."""
    try:
        current_app.send_task("replication.tasks.run_drill", args=[run.pk, user_pk])
    except Exception as exc:  # (kombu's errors vary by transport: any is said, never a 500)
        log.warning("Could not hand drill %s to the scenario worker: %s", run.pk, exc)
        DrillRun.objects.filter(pk=run.pk, outcome=Outcome.RUNNING).update(
            outcome=Outcome.FAILED,
            finished_at=timezone.now(),
            words=f"The console could not hand the drill to the scenario worker ({exc}): is "
            "Redis, the task broker, up? Nothing was done; drill again once it is.",
        )


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
    """Run the drill's steps in order up to the first that fails, then clean up whatever
    happened (an earlier drill's leftovers first); keep each step's time and words, and the
    failover and fail back times. A run whose row is gone meanwhile (its link deleted) still
    cleans up."""
    link = run.link
    source = _source(link)
    if source is None or run.outcome != Outcome.RUNNING:
        return _finish(run, actor, failed=True, words=refusal(link) or "It is not running.")
    drill = drill_steps.Drill(actor, link, source, run.canary, run.pk, made=_leftovers(run))
    run.way_back = drill.way_back
    _save(run, "way_back")
    words = ""
    try:
        left = drill_topics.clean_up(drill)  # an earlier drill's, if it could not clean up
        _leftovers_removed(run)
        if left:
            words = f"What an earlier drill left could not be removed: {'; '.join(left)}"
        words = words or _checked(drill_topics.strangers, drill)
        for step in [] if words else [*drill_steps.STEPS, *drill_steps.WAYS_BACK[drill.way_back]]:
            passed, seen = _run_step(run, step, drill)
            if not passed:
                words = f"{step.name}: {seen}"
                break
    finally:
        run.cleanup = "; ".join(drill_topics.clean_up(drill))
        run.made = drill.made
        _save(run, "cleanup", "made")
    return _finish(run, actor, failed=bool(words), words=words)


def _leftovers(run: DrillRun) -> list[MadeTopic]:
    """What earlier drills of the link made and could not remove (removed before this one)."""
    earlier = DrillRun.objects.filter(link=run.link).exclude(pk=run.pk).exclude(made=[])
    return [made for row in earlier for made in row.made]


def _leftovers_removed(run: DrillRun) -> None:
    DrillRun.objects.filter(link=run.link).exclude(pk=run.pk).update(made=[])


def _checked(check, drill: drill_steps.Drill) -> str:
    try:
        return check(drill)
    except KafkaAdminError as exc:
        return f"Could not read the clusters' topics: {exc}"


def _save(run: DrillRun, *fields: str) -> None:
    """Keep `fields` of the run; a row gone meanwhile (its link deleted) is left gone."""
    DrillRun.objects.filter(pk=run.pk).update(**{f: getattr(run, f) for f in fields})


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
    try:  # what the step made, kept before anything else can fail
        drill_topics.record(drill)
    except KafkaAdminError as exc:
        seen, passed = f"{seen}; and the topics it made could not be read: {exc}", False
    run.steps = [
        *run.steps,
        {"name": step.name, "seconds": seconds, "words": seen, "passed": passed},
    ]
    if step.timing == "failover":
        run.failover_seconds = seconds
    elif step.timing == "failback":
        run.failback_seconds = round((run.failback_seconds or 0) + seconds, 2)
    run.made = drill.made
    _save(run, "steps", "failover_seconds", "failback_seconds", "made")
    return passed, seen


def _finish(run: DrillRun, actor: audit.Actor, *, failed: bool, words: str) -> DrillRun:
    run.outcome = Outcome.FAILED if failed else Outcome.PASSED
    run.words, run.finished_at = words, timezone.now()
    _save(run, "outcome", "words", "finished_at", "cleanup")
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
    hours = whole_number(value, MAX_HOURS)
    if hours is None:
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
