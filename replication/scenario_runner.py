"""The scenario runner: a scenario is an ordered list of steps; each does one thing through the
functions the console uses and then checks the outcome on the real clusters with real clients
(never through Isthmus's own bookkeeping alone). A run and each step's result (what it checked,
what it saw, how long it took, the equivalent command line) are stored as they happen.

A run stops at the first failed step; the steps after it are SKIPPED. Whatever happened, the
scenario's cleanup then removes what the run made: every run uses names of its own, so it can
run twice in a row and beside a user's own links.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils import timezone

from infra.kafka_admin import KafkaAdminError

from . import audit
from .errors import ReplicationError, not_found
from .models import ClusterLink, KafkaCluster, ScenarioRun, ScenarioStep

log = logging.getLogger(__name__)


class StepFailed(Exception):
    """A step's check did not hold: what was expected, and what was seen instead."""

    def __init__(self, expected: str, seen: str):
        super().__init__(f"Expected {expected}; saw {seen}.")
        self.expected, self.seen = expected, seen


@dataclass
class Context:
    """What the steps of one run share: who runs it, the clusters, the run's own names, and
    what earlier steps made."""

    actor: audit.Actor
    source: KafkaCluster
    destination: KafkaCluster
    names: dict[str, str]
    link: ClusterLink | None = None
    kept: dict[str, object] = field(default_factory=dict)


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


def start(
    scenario: Scenario,
    actor: audit.Actor,
    source: str = "source",
    destination: str = "destination",
    tag: str | None = None,
) -> ScenarioRun:
    """A new run of `scenario`, its steps PENDING, between the registered clusters named; its
    topic and link names start with `tag` (by default `scenario-` and a random part)."""
    for name in (source, destination):
        if not KafkaCluster.objects.filter(name=name).exists():
            raise not_found(
                f"No cluster {name!r} is registered. Register the source and destination "
                "clusters first (make demo registers 'source' and 'destination')."
            )
    names = scenario.names(tag or f"scenario-{secrets.token_hex(3)}")
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


def execute(
    scenario: Scenario,
    run: ScenarioRun,
    actor: audit.Actor,
    on_step: Callable[[ScenarioStep], None] | None = None,
) -> ScenarioRun:
    """Run every step of `run` in order, stopping at the first failure, then clean up."""
    context = Context(
        actor=actor,
        source=KafkaCluster.objects.get(name=run.names["source cluster"]),
        destination=KafkaCluster.objects.get(name=run.names["destination cluster"]),
        names=run.names,
    )
    failed = False
    for step, row in zip(scenario.steps, run.steps.order_by("index"), strict=True):
        if failed:
            _finish(row, ScenarioStep.Status.SKIPPED, "not run: an earlier step failed")
            continue
        row.status, row.started_at = ScenarioStep.Status.RUNNING, timezone.now()
        row.save(update_fields=["status", "started_at"])
        if on_step:
            on_step(row)
        began = time.monotonic()
        try:
            seen = step.run(context)
        except StepFailed as exc:
            failed = True
            _finish(row, ScenarioStep.Status.FAILED, exc.seen, began)
        except Exception as exc:  # noqa: BLE001 (any trouble fails the step, and is said)
            failed = True
            log.exception("Scenario %s, step %r", run.scenario, step.title)
            _finish(row, ScenarioStep.Status.FAILED, _words(exc), began)
        else:
            _finish(row, ScenarioStep.Status.PASSED, seen, began)
        if on_step:
            on_step(row)
    left = scenario.cleanup(context)
    run.status = ScenarioRun.Status.FAILED if failed else ScenarioRun.Status.PASSED
    run.finished_at = timezone.now()
    run.cleanup = "; ".join(left)
    run.save(update_fields=["status", "finished_at", "cleanup"])
    audit.record(
        actor,
        "scenario.finish",
        f"scenario {run.scenario}",
        result=audit.AuditEvent.Result.OK if not failed else audit.AuditEvent.Result.FAILED,
        after={"run": run.pk, "status": run.status},
    )
    return run


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
    """`check()`'s first true answer within `seconds`, else StepFailed with what was seen."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise StepFailed(f"{expected} within {seconds:.0f} s", seen())
        time.sleep(0.5)
