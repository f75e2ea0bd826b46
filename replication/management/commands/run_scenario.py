"""`manage.py run_scenario NAME`: run a scenario headless, printing each step as it goes; the
exit status is non-zero when a step fails."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ScenarioStep
from replication.scenarios import registry, runner


class Command(BaseCommand):
    help = __doc__.split("\n")[0]

    def add_arguments(self, parser):
        parser.add_argument("name", help=f"one of: {', '.join(registry.SCENARIOS)}")
        parser.add_argument("--source", default="source", help="the registered source cluster")
        parser.add_argument(
            "--destination", default="destination", help="the registered destination cluster"
        )
        parser.add_argument("--user", help="run as this user (recorded in the audit trail)")
        parser.add_argument(
            "--tag", help="how the run's topic and link names start (default scenario-<random>)"
        )
        parser.add_argument(
            "--confirm",
            default="",
            metavar="NAME",
            help="the scenario's name again, for one that stops the whole source cluster",
        )

    def handle(self, *args, name, source, destination, user, tag, confirm, **options):
        actor = audit.Actor.system("run_scenario")
        if user:
            found = get_user_model().objects.filter(username=user, is_active=True).first()
            if found is None:
                raise CommandError(f"There is no active user {user!r}.")
            actor = audit.Actor(user=found, name=found.username)
        try:
            scenario = registry.get(name)
            cut_off = runner.disrupted(scenario, source)
            if cut_off and confirm != scenario.name:
                names = ", ".join(link.name for link in cut_off)
                self.stderr.write(f"Links cut off while the source cluster is stopped: {names}.")
            run = runner.start(scenario, actor, source, destination, tag, confirmed=confirm)
            run = runner.claim(run, runner.REST, actor)
        except ReplicationError as exc:
            raise CommandError(str(exc)) from exc
        total = len(scenario.steps)
        self.stdout.write(f"Scenario {scenario.name} (run {run.pk}): {scenario.summary}")

        def show(step: ScenarioStep) -> None:
            head = f"[{step.index + 1:2d}/{total}] {step.title}"
            if step.status == ScenarioStep.Status.RUNNING:
                self.stdout.write(f"{head} ...\n        $ {step.cli}")
            else:
                took = f" in {step.seconds:.1f} s" if step.seconds is not None else ""
                self.stdout.write(f"        {step.status}{took}: {step.seen}")

        run = runner.execute(scenario, run, actor, on_step=show)
        skipped = run.steps.filter(status=ScenarioStep.Status.SKIPPED).count()
        if skipped:
            self.stdout.write(f"{skipped} step(s) not run after the failure.")
        if run.cleanup:
            self.stdout.write(f"Cleaning up left: {run.cleanup}")
        if run.status != run.Status.PASSED:
            failed = run.steps.get(status=ScenarioStep.Status.FAILED)
            raise CommandError(
                f"Scenario {scenario.name} failed at step {failed.index + 1}, {failed.title}: "
                f"expected {failed.expected}; saw {failed.seen}"
            )
        self.stdout.write(f"Scenario {scenario.name} passed: {total} steps.")
