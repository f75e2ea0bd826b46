"""Scenario pages: the scenarios on offer with their recent runs, and a run's page, where the
steps show live and a guided run goes on a step (or the rest) at a time. The steps run in the
scenario worker (`replication.tasks.run_scenario`), never in the web request."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from console.access import require
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ScenarioRun, ScenarioStep
from replication.scenarios import registry, runner
from replication.tasks import run_scenario

# A run RUNNING this long with no step started: no scenario worker has taken it.
UNCLAIMED_AFTER_S = 20


@require("console.view")
def scenario_list(request):
    return render(
        request,
        "scenarios/list.html",
        {
            "scenarios": registry.SCENARIOS.values(),
            "runs": ScenarioRun.objects.all()[:20],
        },
    )


STARTS = ("guided", runner.REST)


@require("scenario.run")
def scenario_start(request, name):
    """Start a run (POST): `how` is "guided" (the user asks for each step) or "rest" (every
    step, one after the other). One that stops the source cluster first asks (GET) for its
    name typed, saying which links it cuts off."""
    try:
        scenario = registry.get(name)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc
    cut_off = runner.disrupted(scenario)
    if request.method != "POST":
        if cut_off is None:  # the buttons are on the scenarios page
            return redirect("scenarios")
        how = request.GET.get("how") if request.GET.get("how") in STARTS else "guided"
        context = {"scenario": scenario, "cut_off": cut_off, "how": how}
        return render(request, "scenarios/confirm.html", context)
    how = request.POST.get("how")
    if how not in STARTS:
        messages.error(request, "Say how to run it: step by step, or all steps at once.")
        return redirect("scenarios")
    try:
        run = runner.start(
            scenario,
            audit.Actor.from_request(request),
            confirmed=request.POST.get("confirm_name", "").strip(),
        )
    except ReplicationError as exc:
        messages.error(request, str(exc))
        back = (
            reverse("scenario-start", args=[name]) + f"?how={how}" if cut_off is not None else None
        )
        return redirect(back or "scenarios")
    if how == runner.REST:
        _go_on(request, run, how)
    return redirect(run_url(run))


@require("console.view")
def run_detail(request, pk):
    run = _find_run(pk)
    steps = list(run.steps.all())
    done = sum(s.status in (ScenarioStep.Status.PASSED, ScenarioStep.Status.FAILED) for s in steps)
    running = next((s for s in steps if s.status == ScenarioStep.Status.RUNNING), None)
    context = {
        "run": run,
        "scenario": registry.SCENARIOS.get(run.scenario),
        "steps": steps,
        "done": done,
        "percent": round(100 * done / len(steps)) if steps else 100,
        "next_step": next((s for s in steps if s.status == ScenarioStep.Status.PENDING), None),
        "failed_step": next((s for s in steps if s.status == ScenarioStep.Status.FAILED), None),
        "open": run.finished_at is None,
        "clusters": (run.names.get("source cluster"), run.names.get("destination cluster")),
        "unclaimed": run.status == ScenarioRun.Status.RUNNING
        and running is None
        and _seconds_since_last_move(run, steps) > UNCLAIMED_AFTER_S,
    }
    template = "scenarios/run.html#run" if request.htmx else "scenarios/run.html"
    return render(request, template, context)


@require("scenario.run")
def run_go_on(request, pk, how):
    """Run the next step, the rest, the failed step again, or end the run (POST)."""
    run = _find_run(pk)
    if how not in runner.HOWS:
        raise Http404(f"A run can go on with {', '.join(runner.HOWS)}; not {how[:50]!r}.")
    if request.method == "POST":  # the buttons are on the run's page
        _go_on(request, run, how)
    return redirect(run_url(run))


def run_url(run: ScenarioRun) -> str:
    return reverse("scenario-run", args=[run.pk])


def _go_on(request, run: ScenarioRun, how: str) -> None:
    """Claim the run for `how` and hand it to the scenario worker; a refusal is flashed."""
    try:
        runner.claim(run, how, audit.Actor.from_request(request))
    except ReplicationError as exc:
        messages.error(request, str(exc))
        return
    run_scenario.delay(run.pk, how, request.user.pk)


def _find_run(pk: int) -> ScenarioRun:
    run = ScenarioRun.objects.filter(pk=pk).first()
    if run is None:
        raise Http404(f"There is no scenario run {pk}; the scenarios page lists the recent ones.")
    return run


def _seconds_since_last_move(run: ScenarioRun, steps: list[ScenarioStep]) -> float:
    moves = [run.claimed_at or run.started_at] + [s.started_at for s in steps if s.started_at]
    return (timezone.now() - max(moves)).total_seconds()
