"""The scenario runner on the real clusters, with the real Celery worker and beat: `share-data`
replays seed 000 step for step, headless, and leaves nothing behind (tests/e2e runs it again
from its page); guided runs go a step at a time and retry a failed step; the others each twice
in a row. Kafka's own console consumer prints a merged record's origin header."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.registry_http import SchemaRegistryError
from infra.schema_registry import SUBJECT_NOT_FOUND
from replication.core.errors import ReplicationError
from replication.engine import supervise
from replication.governance.audit import Actor
from replication.models import AuditEvent, ClusterLink, Gateway, ScenarioRun, ScenarioStep
from replication.scenarios import runner
from replication.scenarios.runner import Scenario, Step, StepFailed
from replication.topics import merge_flows
from spark_jobs import merging
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import ordinary, produce, run_tool
from tests.mirror_checks import eventually, topic_gone
from tests.registries import DESTINATION, SOURCE

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


def _replayed_seed_000(run: ScenarioRun) -> None:
    """Every step of seed 000 passed, as the clients saw it, and the run left nothing."""
    steps = list(run.steps.all())
    assert [s.status for s in steps] == [ScenarioStep.Status.PASSED] * len(SEED_COMMANDS)
    for step, command in zip(steps, SEED_COMMANDS, strict=True):
        assert step.cli.startswith(command), (step.cli, command)
        assert step.seen and step.seconds is not None
    assert "TOPIC_AUTHORIZATION_FAILED" in steps[6].seen
    assert steps[-1].seen == (
        "source: first, second, third, old; destination: first, second, third, new"
    )
    assert run.cleanup == ""
    assert not ClusterLink.objects.filter(name=run.names["link"]).exists()
    _topic_gone(run)


def test_share_data_replays_the_tutorial_headless(
    transactional_db, celery_worker, registered_clusters
):
    tag = leftovers.unique_name("share-data")
    out = StringIO()
    call_command("run_scenario", "share-data", "--tag", tag, stdout=out)

    printed = out.getvalue()
    run = ScenarioRun.objects.get(names__topic=f"{tag}-demo")
    assert run.status == ScenarioRun.Status.PASSED, printed
    _replayed_seed_000(run)
    assert f"Scenario share-data passed: {len(SEED_COMMANDS)} steps." in printed


def test_an_unknown_scenario_or_cluster_is_refused_clearly(db, registered_clusters):
    with pytest.raises(CommandError, match="There is no scenario 'nope': run one of share-data"):
        call_command("run_scenario", "nope")
    with pytest.raises(CommandError, match="No cluster 'elsewhere' is registered"):
        call_command("run_scenario", "share-data", "--destination", "elsewhere")
    assert not ScenarioRun.objects.exists()


def _run(name: str, tag: str) -> tuple[ScenarioRun, str]:
    out = StringIO()
    try:
        call_command("run_scenario", name, "--tag", tag, "--confirm", name, stdout=out)
    except CommandError as exc:
        raise AssertionError(f"{exc}\n{out.getvalue()}") from exc
    return ScenarioRun.objects.filter(scenario=name).latest("pk"), out.getvalue()


def _topic_gone(run: ScenarioRun) -> None:
    for node in kafka.NODES:
        topic_gone(node, run.names["topic"])


def _left_nothing(run: ScenarioRun) -> None:
    assert run.cleanup == ""
    assert not ClusterLink.objects.filter(name=run.names["link"]).exists()
    _topic_gone(run)
    for node in kafka.NODES:
        admin = KafkaAdmin(admin_config(node))
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
    # What the run saw: the destination holding the very offsets the group committed on the
    # source (60 records read there first), not the step's description.
    synced, on_source = steps["Wait for the offset sync"].seen, run.kept["source offsets"]
    assert sum(on_source.values()) == 60
    assert synced.startswith("the destination holds ")
    assert all(f"partition {p}: {o}" in synced for p, o in on_source.items()), synced
    assert steps["Promote the mirror"].seen.startswith("promote: the mirror is STOPPED")
    _left_nothing(run)


@pytest.mark.serial
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
    actor = Actor.system("tests")
    run = runner.start(scenario, actor, tag="tag")

    run = runner.execute(scenario, runner.claim(run, "rest", actor), actor)

    assert run.status == ScenarioRun.Status.FAILED and run.cleanup == "something stayed"
    steps = list(run.steps.all())
    assert [s.status for s in steps] == ["PASSED", "FAILED", "SKIPPED"]
    assert steps[0].cli == "cmd one tag-t" and steps[1].seen == "2 records"
    assert steps[1].expected == "3 records" and steps[2].seen.startswith("not run")
    assert cleaned == ["tag-t"]


def _guided(cleaned: list, tries: list) -> Scenario:
    """Three steps: the first keeps a value for the third; the second fails the first time."""

    def keep(context):
        context.kept["seen"] = {"0": 7}
        return "kept 7"

    def flaky(context):
        tries.append(1)
        if len(tries) == 1:
            raise StepFailed("the topic", "no topic yet")
        return "the topic"

    return Scenario(
        name="guided",
        title="A guided scenario",
        summary="three steps",
        names=lambda tag: {"topic": f"{tag}-t"},
        steps=[
            Step("one", "", "one", "7 kept", keep),
            Step("two", "", "two", "the topic", flaky),
            Step("three", "", "three", "7", lambda c: f"read {c.kept['seen']['0']}"),
        ],
        cleanup=lambda c: cleaned.append(c.names["topic"]) or [],
    )


def test_a_guided_run_goes_a_step_at_a_time_retries_a_failed_step_and_keeps_what_steps_saw(
    db, registered_clusters
):
    cleaned, tries = [], []
    scenario, actor = _guided(cleaned, tries), Actor.system("tests")
    run = runner.start(scenario, actor, tag="g")
    assert run.status == ScenarioRun.Status.WAITING

    def go(how: str) -> ScenarioRun:
        claimed = runner.claim(ScenarioRun.objects.get(pk=run.pk), how, actor)
        # Each part runs from what is stored, as the console's tasks do.
        fresh = ScenarioRun.objects.get(pk=claimed.pk)
        return runner.go_on(scenario, fresh, how, actor)

    run = go("next")
    assert run.status == ScenarioRun.Status.WAITING and run.kept == {"seen": {"0": 7}}
    assert [s.status for s in run.steps.all()] == ["PASSED", "PENDING", "PENDING"]

    run = go("rest")
    assert (run.status, run.finished_at, cleaned) == (ScenarioRun.Status.FAILED, None, [])
    assert [s.status for s in run.steps.all()] == ["PASSED", "FAILED", "PENDING"]
    with pytest.raises(ReplicationError, match="Step 2 failed: retry it, or end the run"):
        runner.claim(run, "next", actor)

    run = go("retry")
    assert run.status == ScenarioRun.Status.PASSED and run.finished_at is not None
    assert [s.seen for s in run.steps.all()] == ["kept 7", "the topic", "read 7"]
    assert cleaned == ["g-t"] and len(tries) == 2
    with pytest.raises(ReplicationError, match="The run has ended \\(PASSED\\)"):
        runner.claim(run, "next", actor)
    assert list(
        AuditEvent.objects.filter(action__startswith="scenario.").values_list("action", flat=True)
    ) == ["scenario.finish", "scenario.retry", "scenario.rest", "scenario.next", "scenario.start"]


def test_a_busy_run_is_claimed_once_and_ending_it_skips_the_rest_and_cleans_up(
    db, registered_clusters
):
    cleaned = []
    scenario, actor = _guided(cleaned, []), Actor.system("tests")
    run = runner.start(scenario, actor, tag="e")

    runner.claim(run, "next", actor)
    with pytest.raises(ReplicationError, match="busy with a step") as refused:
        runner.claim(ScenarioRun.objects.get(pk=run.pk), "next", actor)
    assert refused.value.status == 409
    run = runner.go_on(scenario, run, "next", actor)

    run = runner.go_on(scenario, runner.claim(run, "end", actor), "end", actor)
    assert run.status == ScenarioRun.Status.ENDED and cleaned == ["e-t"]
    assert [s.status for s in run.steps.all()] == ["PASSED", "SKIPPED", "SKIPPED"]


def test_swap_goes_there_and_back_twice_in_a_row_copying_nothing_twice(
    transactional_db, celery_worker, registered_clusters
):
    for attempt in range(2):  # names of its own each time, and nothing left between
        run, printed = _run("swap", leftovers.unique_name(f"swap{attempt}"))

        assert run.status == ScenarioRun.Status.PASSED, printed
        steps = {s.title: s for s in run.steps.all()}
        assert steps["Reverse it: the cloud takes the writes"].seen.endswith("nothing copied")
        assert steps["Reverse back"].seen.endswith("nothing copied")
        checked = steps["Check every record is there once, at the same offset on both"].seen
        assert checked.startswith("both clusters hold the same 35 records at offsets 0 to 34")
        assert run.cleanup == ""
        assert not ClusterLink.objects.filter(name=run.names["link"]).exists()
        _topic_gone(run)


def test_active_active_holds_each_record_once_on_each_side_twice_in_a_row(
    transactional_db, celery_worker, registered_clusters
):
    for attempt in range(2):  # names of its own each time, and nothing left between
        run, printed = _run("active-active", leftovers.unique_name(f"aa{attempt}"))

        assert run.status == ScenarioRun.Status.PASSED, printed
        steps = {s.title: s for s in run.steps.all()}
        assert steps["Each side holds every record once"].seen.endswith(
            "holds the same 60 records, each once, on both sides"
        )
        assert "carry isthmus.origin:" in steps["Read the provenance"].seen
        moved = re.search(
            r"read the 20 it had not read, (\d+) again \(the bound: (\d+)\)",
            steps["The group moves to dc2"].seen,
        )
        assert moved and int(moved[1]) <= int(moved[2]), steps["The group moves to dc2"].seen
        assert run.cleanup == "" and not ClusterLink.objects.filter(name=run.names["link"])
        for node in kafka.NODES:
            left = KafkaAdmin(admin_config(node)).list_topic_names()
            assert not [t for t in left if t.startswith(run.names["topic"][: -len("topic1")])]


def test_kafkas_console_consumer_prints_a_merged_records_origin(
    make_link, make_topic, topic_name, registered_clusters
):
    make_topic(kafka.SOURCE, topic_name)
    produce(ordinary(kafka.SOURCE), topic_name, [{"key": b"k", "value": b"from dc1"}])
    link = make_link()
    merge_flows.create_flow(Actor.system("tests"), link, topic_name, f"{topic_name}.copy")

    def printed() -> str:
        supervise.supervise(link)
        shown = run_tool(
            "kafka-console-consumer",
            "--bootstrap-server",
            kafka.DESTINATION.bootstrap,
            "--topic",
            f"{topic_name}.copy",
            "--from-beginning",
            "--max-messages",
            "1",
            "--timeout-ms",
            "5000",
            "--property",
            "print.headers=true",
        )
        # (Kafka 4 says first that --property is deprecated, as the seed types it.)
        return next((x for x in shown.stdout.splitlines() if "\t" in x), "")

    line = eventually(printed, 120, "the copied record printed")
    cluster = registered_clusters["source"].cluster_id
    assert line.startswith(f"{merging.ORIGIN}:{cluster},{topic_name},0,0,")
    assert line.endswith("\tfrom dc1")


@pytest.mark.serial
def test_dr_round_trip_fails_over_restores_and_reverses_back_twice_reading_every_record_once(
    transactional_db, celery_worker, registered_clusters, stack
):
    for attempt in range(2):  # names of its own each time, and nothing left between
        run, printed = _run("dr-round-trip", leftovers.unique_name(f"trip{attempt}"))

        assert run.status == ScenarioRun.Status.PASSED, printed
        steps = {s.title: s for s in run.steps.all()}
        restored = steps["Truncate and restore the old primary"].seen
        assert "the 10 records the mirror never got are in" in restored
        assert steps["Wait until it holds the promoted topic"].seen.endswith(
            "only 20 copied from destination"
        )
        assert steps["Reverse back"].seen.endswith("mirrors it")
        assert steps["The group moves back and reads the rest"].seen.startswith(
            "the group read all 130 records once across the round trip"
        )
        assert all(s.pid for s in stack.status(["source"]))
        _left_nothing(run)
        source_topics = KafkaAdmin(admin_config(kafka.SOURCE)).list_topic_names()
        assert not [t for t in source_topics if t.startswith(run.names["topic"])]


def test_schema_linking_decodes_every_avro_record_on_dc2_as_the_schema_evolves_twice_in_a_row(
    transactional_db, celery_worker, registered_clusters
):
    for attempt in range(2):  # names of its own each time, and nothing left between
        run, printed = _run("schema-linking", leftovers.unique_name(f"sl{attempt}"))

        assert run.status == ScenarioRun.Status.PASSED, printed
        steps = {s.title: s for s in run.steps.all()}
        seen = steps["Consume them on dc2 as the schema evolves"].seen
        assert "then, without a restart, 10 of the new version's id" in seen, seen
        compared = steps["Compare the registries"].seen
        assert "on both registries, IMPORT mode on dc2; the link shows it IN_STEP" in compared
        assert run.cleanup == ""
        assert not ClusterLink.objects.filter(name=run.names["link"]).exists()
        _topic_gone(run)
        subject = f"{run.names['topic']}-value"
        for held_by in (SOURCE, DESTINATION):  # its versions deleted for good on both
            with pytest.raises(SchemaRegistryError) as gone:
                held_by.versions(subject, deleted=True)
            assert gone.value.code == SUBJECT_NOT_FOUND


def test_client_switchover_moves_an_application_through_a_gateway_twice_in_a_row(
    transactional_db, celery_worker, registered_clusters
):
    for attempt in range(2):  # names of its own each time, and nothing left between
        run, printed = _run("client-switchover", leftovers.unique_name(f"cs{attempt}"))

        assert run.status == ScenarioRun.Status.PASSED, printed
        steps = {s.title: s for s in run.steps.all()}
        moved = steps["Fail over, moving the application"].seen
        assert "switched its clients to destination" in moved, moved
        carried = steps["Watch the application carry on"].seen
        assert carried.startswith("on destination, the same processes:"), carried
        checked = steps["Stop it and check every record"].seen
        assert "each at its offset on source (before the switch) or destination" in checked
        assert run.cleanup == ""
        assert not Gateway.objects.filter(name=run.names["gateway"]).exists()
        _topic_gone(run)
