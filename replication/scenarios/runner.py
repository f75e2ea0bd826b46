"""The scenario runner: a scenario is an ordered list of steps; each does one thing through the
functions the console uses and then checks the outcome on the real clusters with real clients
(never through Isthmus's own bookkeeping alone). A run and each step's result (what it checked,
what it saw, how long it took, the equivalent command line) are stored as they happen.

A run goes step by step (a guided run in the console: the user asks for the next step or the
rest) or all at once (`manage.py run_scenario`). It stops at the first failed step: headless,
the steps after it are SKIPPED and the run ends; in the console the run waits, and the failed
step can be retried or the run ended. When a run ends, the scenario's cleanup removes what it
made: every run uses names of its own, so it can run twice in a row and beside a user's own
links. What steps keep for later ones (`Context.kept`) is stored with the run, so each step
can run in a task of its own.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from infra import processes
from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError, conflict, not_found
from replication.governance import audit
from replication.models import ClusterLink, KafkaCluster, ScenarioRun, ScenarioStep

log = logging.getLogger(__name__)


class StepFailed(Exception):
    """A step's check did not hold: what was expected, and what was seen instead."""

    def __init__(self, expected: str, seen: object):
        super().__init__(f"Expected {expected}; saw {seen}.")
        self.expected, self.seen = expected, str(seen)


@dataclass
class Context:
    """What the steps of one run share: who runs it, the clusters, the run's own names, and
    what earlier steps made."""

    actor: audit.Actor
    source: KafkaCluster
    destination: KafkaCluster
    names: dict[str, str]
    made: ClusterLink | None = None  # the run's link, once its first step made it
    kept: dict[str, Any] = field(default_factory=dict)  # JSON, as the run stores it

    @property
    def link(self) -> ClusterLink:
        """The run's link, for the steps after the one that makes it."""
        if self.made is None:
            raise StepFailed("the run's link", "none: the step that makes it did not")
        return self.made


@dataclass(frozen=True)
class Step:
    title: str
    explanation: str
    cli: str  # the equivalent command line; {topic}, {link} and the other names filled in
    expected: str
    run: Callable[[Context], str]  # does it, checks it; returns what it saw or raises StepFailed


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    summary: str
    names: Callable[[str], dict[str, str]]  # the run's names from a tag of its own
    steps: list[Step]
    cleanup: Callable[[Context], list[str]]  # returns what it could not remove
    # It stops the whole source cluster for a while: every link and user of it is cut off, so
    # starting it takes a typed confirmation (`disrupted`).
    stops_source: bool = False


def disrupted(scenario: Scenario, source: str = "source") -> list[ClusterLink] | None:
    """The links a run of `scenario` cuts off when it stops the source cluster (those reading
    from it, and those writing into it); None for a scenario that stops no cluster."""
    if not scenario.stops_source:
        return None
    cluster = KafkaCluster.objects.filter(name=source).first()
    if cluster is None:
        return []
    touching = ClusterLink.objects.filter(destination=cluster)
    if cluster.cluster_id:
        touching = touching | ClusterLink.objects.filter(source_cluster_id=cluster.cluster_id)
    return list(touching.select_related("destination").order_by("name"))


def start(
    scenario: Scenario,
    actor: audit.Actor,
    source: str = "source",
    destination: str = "destination",
    tag: str | None = None,
    *,
    confirmed: str = "",
) -> ScenarioRun:
    """A new run of `scenario`, WAITING with its steps PENDING, between the registered
    clusters named; its topic and link names start with `tag` (by default the
    SCENARIO_NAME_PREFIX setting and a random part). One that stops the source cluster
    (`disrupted`) starts only with its name in `confirmed`."""
    if scenario.stops_source and confirmed != scenario.name:
        raise ReplicationError(
            f"Scenario {scenario.name} stops the whole source cluster {source!r} for a while, "
            "cutting off every link and client of it: type its name to confirm. Nothing was "
            "started."
        )
    for name in (source, destination):
        if not KafkaCluster.objects.filter(name=name).exists():
            raise not_found(
                f"No cluster {name!r} is registered. Register the source and destination "
                "clusters first (make demo registers 'source' and 'destination')."
            )
    names = scenario.names(tag or f"{settings.SCENARIO_NAME_PREFIX}-{secrets.token_hex(3)}")
    run = ScenarioRun.objects.create(
        scenario=scenario.name,
        actor_name=actor.name,
        names={**names, "source cluster": source, "destination cluster": destination},
    )
    ScenarioStep.objects.bulk_create(
        ScenarioStep(
            run=run,
            index=i,
            title=step.title,
            explanation=step.explanation,
            cli=step.cli.format(**names),
            expected=step.expected.format(**names),
        )
        for i, step in enumerate(scenario.steps)
    )
    audit.record(actor, "scenario.start", f"scenario {scenario.name}", after={"run": run.pk})
    return run


NEXT, REST, RETRY, END = "next", "rest", "retry", "end"
HOWS = (NEXT, REST, RETRY, END)


def claim(run: ScenarioRun, how: str, actor: audit.Actor) -> ScenarioRun:
    """Take the run for `how` (run its next step, the rest, retry its failed step, or end it):
    RUNNING from now until that is done. The database decides between two clicks at once: one
    gets the run, the other a clear refusal."""
    if how not in HOWS:
        raise ReplicationError(f"There is no way to go on {how!r}: use one of {', '.join(HOWS)}.")
    failed = run.steps.filter(status=ScenarioStep.Status.FAILED).first()
    if how == RETRY and failed is None:
        raise conflict("No step of this run failed: there is nothing to retry.")
    if how in (NEXT, REST) and failed is not None:
        raise conflict(
            f"Step {failed.index + 1} failed: retry it, or end the run (which cleans up)."
        )
    taken = ScenarioRun.objects.filter(
        pk=run.pk, status__in=[ScenarioRun.Status.WAITING, ScenarioRun.Status.FAILED]
    ).update(status=ScenarioRun.Status.RUNNING, claimed_at=timezone.now())
    run.refresh_from_db()
    if not taken:
        if run.status == ScenarioRun.Status.RUNNING:
            raise conflict("The run is busy with a step; wait until it is done.")
        raise conflict(f"The run has ended ({run.status}); start a new one.")
    if how == RETRY:
        assert failed is not None  # (refused above otherwise)
        _finish(failed, ScenarioStep.Status.PENDING, "")
    audit.record(
        actor,
        f"scenario.{how}",
        f"scenario {run.scenario}",
        after={"run": run.pk, "from step": _next_index(run)},
    )
    return run


def execute(
    scenario: Scenario,
    run: ScenarioRun,
    actor: audit.Actor,
    on_step: Callable[[ScenarioStep], None] | None = None,
    *,
    steps: int | None = None,
    end_on_failure: bool = True,
) -> ScenarioRun:
    """Run the claimed `run`'s pending steps in order, at most `steps` of them (all when
    None), stopping at the first failure. Once every step passed, or a step failed and
    `end_on_failure`, the run ends and its cleanup runs; otherwise it WAITS for the next
    `claim` (a guided run, or a failed step to retry)."""
    context = _context(run, actor)
    done = 0
    failed = False
    for step, row in zip(scenario.steps, run.steps.order_by("index"), strict=True):
        if row.status != ScenarioStep.Status.PENDING:
            continue
        if failed and end_on_failure:
            _finish(row, ScenarioStep.Status.SKIPPED, "not run: an earlier step failed")
            continue
        if failed or (steps is not None and done >= steps):
            break
        failed = not _run_step(step, row, context, on_step)
        done += 1
        run.kept = context.kept
        run.save(update_fields=["kept"])
    if failed and not end_on_failure:
        return _settle(run, ScenarioRun.Status.FAILED)
    if not failed and run.steps.filter(status=ScenarioStep.Status.PENDING).exists():
        return _settle(run, ScenarioRun.Status.WAITING)
    return _end(scenario, run, context, failed)


def go_on(scenario: Scenario, run: ScenarioRun, how: str, actor: audit.Actor) -> ScenarioRun:
    """Do what `claim` took the run for, as the console does: a failed step waits to be
    retried instead of ending the run."""
    if how == END:
        return end(scenario, run, actor)
    steps = 1 if how == NEXT else None
    return execute(scenario, run, actor, steps=steps, end_on_failure=False)


def end(scenario: Scenario, run: ScenarioRun, actor: audit.Actor) -> ScenarioRun:
    """End a claimed run before its last step: the steps left are SKIPPED, cleanup runs."""
    run.steps.filter(status=ScenarioStep.Status.PENDING).update(
        status=ScenarioStep.Status.SKIPPED, seen="not run: the run was ended"
    )
    failed = run.steps.filter(status=ScenarioStep.Status.FAILED).exists()
    return _end(scenario, run, _context(run, actor), failed, ended=True)


def _context(run: ScenarioRun, actor: audit.Actor) -> Context:
    """The run's context, rebuilt from what is stored, so a run can go on in another task."""
    destination = KafkaCluster.objects.get(name=run.names["destination cluster"])
    return Context(
        actor=actor,
        source=KafkaCluster.objects.get(name=run.names["source cluster"]),
        destination=destination,
        names=run.names,
        made=ClusterLink.objects.filter(
            destination=destination, name=run.names.get("link", "")
        ).first(),
        kept=dict(run.kept),
    )


def _run_step(step: Step, row: ScenarioStep, context: Context, on_step: Callable | None) -> bool:
    """Run one step and store its result; returns whether it passed."""
    row.status, row.started_at = ScenarioStep.Status.RUNNING, timezone.now()
    row.save(update_fields=["status", "started_at"])
    if on_step:
        on_step(row)
    began = time.monotonic()
    try:
        seen = step.run(context)
    except StepFailed as exc:
        _finish(row, ScenarioStep.Status.FAILED, exc.seen, began)
    except Exception as exc:  # (any trouble fails the step, and is said)
        log.exception("Scenario %s, step %r", row.run.scenario, step.title)
        _finish(row, ScenarioStep.Status.FAILED, _words(exc), began)
    else:
        _finish(row, ScenarioStep.Status.PASSED, seen, began)
    if on_step:
        on_step(row)
    return row.status == ScenarioStep.Status.PASSED


def _end(
    scenario: Scenario, run: ScenarioRun, context: Context, failed: bool, ended: bool = False
) -> ScenarioRun:
    left = scenario.cleanup(context)
    run.status = (
        ScenarioRun.Status.FAILED
        if failed
        else ScenarioRun.Status.ENDED
        if ended
        else ScenarioRun.Status.PASSED
    )
    run.finished_at = timezone.now()
    run.cleanup = "; ".join(left)
    run.save(update_fields=["status", "finished_at", "cleanup"])
    audit.record(
        context.actor,
        "scenario.finish",
        f"scenario {run.scenario}",
        result=audit.AuditEvent.Result.FAILED if failed else audit.AuditEvent.Result.OK,
        after={"run": run.pk, "status": run.status},
    )
    return run


def _settle(run: ScenarioRun, status: str) -> ScenarioRun:
    run.status = status
    run.save(update_fields=["status"])
    return run


def _next_index(run: ScenarioRun) -> int | None:
    row = run.steps.filter(status=ScenarioStep.Status.PENDING).order_by("index").first()
    return None if row is None else row.index + 1


def _finish(row: ScenarioStep, status: str, seen: str, began: float | None = None) -> None:
    row.status, row.seen = status, seen
    row.seconds = None if began is None else round(time.monotonic() - began, 2)
    row.save(update_fields=["status", "seen", "seconds"])


def _words(exc: Exception) -> str:
    """What stopped a step: the domain's and Kafka's messages as they are; anything else as an
    unexpected error, with where to read more."""
    if isinstance(exc, (ReplicationError, KafkaAdminError)):
        return str(exc)
    return f"an unexpected error ({type(exc).__name__}: {exc}); the console's log has the details"


def wait_for(check: Callable[[], object], seconds: float, expected: str, seen: Callable[[], str]):
    """`check()`'s first true answer within `seconds`, else StepFailed with what was seen (an
    error in `check` fails the step with its own words)."""
    result = processes.wait_for(check, seconds, ignore=())
    if not result:
        raise StepFailed(f"{expected} within {seconds:.0f} s", seen())
    return result
