"""The scenario runner on the real clusters, with the real Celery worker and beat: `share-data`
replays seed 000 step for step, headless, twice in a row, and leaves nothing behind."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.models import ClusterLink, ScenarioRun, ScenarioStep
from tests import leftovers
from tests.conftest import admin_config

pytestmark = pytest.mark.integration

# Seed 000's commands, in its order (the scenario's steps, one for one).
SEED_COMMANDS = [
    "kafka-topics --create --topic",
    "kafka-console-producer --topic",
    "kafka-console-consumer --topic",
    "kafka-cluster-links --bootstrap-server localhost:9093 --create --link",
    "kafka-mirrors --create --mirror-topic",
    "kafka-replica-status --topics",
    "kafka-console-producer --topic",
    "kafka-configs --alter --topic",
    "kafka-topics --alter --topic",
    "kafka-cluster-links --list --link",
    "kafka-mirrors --promote --topics",
    "kafka-mirrors --describe --topics",
    "kafka-console-producer --topic",
    "kafka-console-consumer --topic",
]


def test_share_data_replays_the_tutorial_and_passes_again_right_after(
    transactional_db, celery_worker, registered_clusters
):
    for attempt in range(2):
        tag = leftovers.unique_name(f"share-data-{attempt}")
        out = StringIO()
        call_command("run_scenario", "share-data", "--tag", tag, stdout=out)

        printed = out.getvalue()
        run = ScenarioRun.objects.get(names__topic=f"{tag}-demo")
        assert run.status == ScenarioRun.Status.PASSED, printed
        steps = list(run.steps.all())
        assert [s.status for s in steps] == [ScenarioStep.Status.PASSED] * len(SEED_COMMANDS)
        for step, command in zip(steps, SEED_COMMANDS, strict=True):
            assert step.cli.startswith(command), (step.cli, command)
            assert step.seen and step.seconds is not None
        assert "TOPIC_AUTHORIZATION_FAILED" in steps[6].seen
        assert steps[-1].seen == (
            "source: first, second, third, old; destination: first, second, third, new"
        )
        assert f"Scenario share-data passed: {len(SEED_COMMANDS)} steps." in printed
        # It cleaned up after itself.
        assert run.cleanup == ""
        assert not ClusterLink.objects.filter(name=f"{tag}-demo-link").exists()
        for node in kafka.NODES:
            assert f"{tag}-demo" not in KafkaAdmin(admin_config(node)).list_topic_names()


def test_an_unknown_scenario_or_cluster_is_refused_clearly(db, registered_clusters):
    with pytest.raises(CommandError, match="There is no scenario 'nope': run one of share-data"):
        call_command("run_scenario", "nope")
    with pytest.raises(CommandError, match="No cluster 'elsewhere' is registered"):
        call_command("run_scenario", "share-data", "--destination", "elsewhere")
    assert not ScenarioRun.objects.exists()


def _run(name: str, tag: str) -> tuple[ScenarioRun, str]:
    out = StringIO()
    try:
        call_command("run_scenario", name, "--tag", tag, stdout=out)
    except CommandError as exc:
        raise AssertionError(f"{exc}\n{out.getvalue()}") from exc
    return ScenarioRun.objects.get(names__topic=f"{tag}-orders"), out.getvalue()


def _left_nothing(run: ScenarioRun) -> None:
    assert run.cleanup == ""
    assert not ClusterLink.objects.filter(name=run.names["link"]).exists()
    for node in kafka.NODES:
        admin = KafkaAdmin(admin_config(node))
        assert run.names["topic"] not in admin.list_topic_names()
        assert admin.group_offsets([run.names["group"]])[run.names["group"]] == {}


def test_migration_moves_a_group_with_its_offsets_then_promotes(
    transactional_db, celery_worker, registered_clusters
):
    run, printed = _run("migration", leftovers.unique_name("migration"))

    assert run.status == ScenarioRun.Status.PASSED, printed
    steps = {s.title: s for s in run.steps.all()}
    assert steps["Start the consumer on the destination"].seen == (
        "read the other 40 records on the destination: none skipped, none twice"
    )
    assert "the same" in steps["Wait for the offset sync"].expected
    assert steps["Promote the mirror"].seen.startswith("promote: the mirror is STOPPED")
    _left_nothing(run)


def test_disaster_recovery_fails_over_and_the_group_resumes_with_the_source_gone(
    transactional_db, celery_worker, registered_clusters, stack
):
    run, printed = _run("disaster-recovery", leftovers.unique_name("dr"))

    assert run.status == ScenarioRun.Status.PASSED, printed
    steps = {s.title: s for s in run.steps.all()}
    assert steps["Lose the source cluster"].seen.startswith("the source cluster is stopped")
    assert steps["Fail over"].seen.startswith("failover: the mirror is STOPPED")
    assert steps["Resume the group on the destination"].seen.endswith("none skipped, none twice")
    assert steps["Start the source cluster again"].seen.endswith("answers again")
    assert all(s.pid for s in stack.status(["source"]))
    _left_nothing(run)


def test_a_failed_step_stops_the_run_skips_the_rest_and_cleans_up(db, registered_clusters):
    from replication import audit, scenario_runner
    from replication.scenario_runner import Scenario, Step, StepFailed

    cleaned = []

    def fail(context):
        raise StepFailed("3 records", "2 records")

    scenario = Scenario(
        name="made-up",
        title="A made-up scenario",
        summary="three steps, the second fails",
        names=lambda tag: {"topic": f"{tag}-t"},
        steps=[
            Step("one", "", "cmd one {topic}", "fine", lambda c: "fine"),
            Step("two", "", "cmd two", "3 records", fail),
            Step("three", "", "cmd three", "never", lambda c: "never"),
        ],
        cleanup=lambda c: cleaned.append(c.names["topic"]) or ["something stayed"],
    )
    actor = audit.Actor.system("tests")
    run = scenario_runner.start(scenario, actor, tag="tag")

    run = scenario_runner.execute(scenario, run, actor)

    assert run.status == ScenarioRun.Status.FAILED and run.cleanup == "something stayed"
    steps = list(run.steps.all())
    assert [s.status for s in steps] == ["PASSED", "FAILED", "SKIPPED"]
    assert steps[0].cli == "cmd one tag-t" and steps[1].seen == "2 records"
    assert steps[1].expected == "3 records" and steps[2].seen.startswith("not run")
    assert cleaned == ["tag-t"]
