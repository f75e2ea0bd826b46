"""Drills on in-memory clusters, what keeps them to their own topics: the canary's name is the
link's own and kept for drills (no mirror of such a name by hand or by auto-create), a drill
deletes only the topics it made (a stranger of that name refuses it), one drill at a time on
the two halves of a bidirectional link, a drill the broker does not take ends FAILED in words,
a link is not deleted mid-drill and a drill whose row went still cleans up. The steps on real
brokers are tests/integration/test_drills.py's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.cutover.link_deletion import delete_link
from replication.governance import audit
from replication.kafka.connections import cluster_admin
from replication.models import ClusterLink, DrillRun, canary_topic, is_canary
from replication.scenarios import drill_steps, drill_topics, drills
from replication.sync import auto_mirrors
from replication.topics.mirrors import create_mirror

pytestmark = [pytest.mark.django_db]

OPERATOR = audit.Actor(name="operator")


@pytest.fixture
def handed(monkeypatch) -> list[int]:
    """The drills handed to the scenario worker (none runs here)."""
    sent: list[int] = []
    monkeypatch.setattr(drills, "hand_over", lambda run, user_pk=None: sent.append(run.pk))
    return sent


def test_each_link_has_a_canary_of_its_own_and_its_name_is_kept_for_drills(make_link, make_topic):
    one, other = make_link(), make_link()
    assert canary_topic(one) != canary_topic(other)  # (the halves of one name too: below)
    assert is_canary(one, canary_topic(one)) and len(canary_topic(one)) + 200 <= 249
    assert not is_canary(one, "orders.isthmus-drill.x")

    mine = make_topic(kafka.SOURCE, "isthmus-drill.mine")
    with pytest.raises(ReplicationError, match="kept for the canary topics of DR drills"):
        create_mirror(OPERATOR, one, mine)
    configs = {
        "auto.create.mirror.topics.enable": "true",
        "auto.create.mirror.topics.filters": '{"topicFilters": [{"name": "*", '
        '"patternType": "LITERAL", "filterType": "INCLUDE"}]}',
    }
    auto = make_link(configs)
    assert auto_mirrors.wanted(auto, {mine, "orders"}) == ["orders"]


def _steps(monkeypatch, *steps) -> None:
    monkeypatch.setattr(
        drill_steps,
        "STEPS",
        [drill_steps.DrillStepSpec(f"step {i}", s) for i, s in enumerate(steps)],
    )
    monkeypatch.setattr(drill_steps, "WAYS_BACK", {drill_steps.DELETE: [], drill_steps.RESTORE: []})


def test_a_drill_removes_what_it_made_and_never_a_topic_of_its_name_it_did_not(
    make_link, make_topic, handed, monkeypatch
):
    link = make_link()
    canary = canary_topic(link)
    source = cluster_admin(drills._source(link))
    _steps(monkeypatch, drill_steps.create_canary)
    run = drills.execute(drills.start(OPERATOR, link), OPERATOR)
    assert run.outcome == "PASSED" and canary not in source.list_topic_names()
    assert DrillRun.objects.get(pk=run.pk).made == []

    make_topic(kafka.SOURCE, canary)  # a user's, made on the cluster itself
    run = drills.execute(drills.start(OPERATOR, link), OPERATOR)
    assert run.outcome == "FAILED" and "no drill made it" in run.words
    assert f"{canary} on source" in run.words and canary in source.list_topic_names()


def test_a_topic_a_drill_made_and_someone_made_again_is_left_alone(make_link):
    link = make_link()
    drill = drill_steps.Drill(OPERATOR, link, drills._source(link), canary_topic(link), 0)
    drill_steps.create_canary(drill)
    drill_topics.record(drill)
    admin = cluster_admin(drill.source)
    admin.delete_topic(drill.canary)
    admin.create_topic(drill.canary, 1, None, {})  # someone else's now: another topic id
    assert drill_topics.clean_up(drill) == [] and drill.canary in admin.list_topic_names()
    assert "no drill made it" in drill_topics.strangers(drill)


def test_a_drill_whose_link_went_meanwhile_still_cleans_up(make_link, handed, monkeypatch):
    link = make_link()

    def link_gone(d: drill_steps.Drill) -> str:
        DrillRun.objects.filter(pk=d.run_pk).delete()  # as a link's deletion cascades
        return "gone"

    _steps(monkeypatch, drill_steps.create_canary, link_gone, drill_steps.create_canary)
    run = drills.execute(drills.start(OPERATOR, link), OPERATOR)
    assert canary_topic(link) not in cluster_admin(drills._source(link)).list_topic_names()
    assert not DrillRun.objects.filter(pk=run.pk).exists()
    assert [s["passed"] for s in run.steps] == [True, True, False]  # (the canary stood)


def test_one_drill_at_a_time_on_the_two_halves_of_a_bidirectional_link(bidirectional, handed):
    half = bidirectional()
    other = ClusterLink.objects.exclude(pk=half.pk).get(name=half.name)
    assert canary_topic(half) != canary_topic(other)
    drills.start(OPERATOR, half)
    with pytest.raises(ReplicationError, match=f"A drill of link {half.name} into .* under way"):
        drills.start(OPERATOR, other)
    assert DrillRun.objects.filter(link=other).count() == 0


def test_a_link_is_not_deleted_while_a_drill_of_it_runs(bidirectional, handed):
    half = bidirectional()
    other = ClusterLink.objects.exclude(pk=half.pk).get(name=half.name)
    run = drills.start(OPERATOR, other)
    with pytest.raises(ReplicationError, match="is under way .* Wait until the drill ends"):
        delete_link(OPERATOR, half, force=True)
    assert ClusterLink.objects.filter(name=half.name).count() == 2
    DrillRun.objects.filter(pk=run.pk).update(outcome="PASSED")
    delete_link(OPERATOR, half)
    assert not ClusterLink.objects.filter(name=half.name).exists()


def test_a_drill_is_handed_over_once_committed_and_one_the_broker_refuses_ends_failed(
    make_link, client_as, monkeypatch, django_capture_on_commit_callbacks
):
    link = make_link()

    class Down:
        def send_task(self, *args, **kwargs):
            raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(drills, "current_app", Down())
    with django_capture_on_commit_callbacks() as waiting:
        run = drills.start(OPERATOR, link)
    assert DrillRun.objects.get(pk=run.pk).outcome == "RUNNING" and len(waiting) == 1
    DrillRun.objects.filter(pk=run.pk).update(outcome="PASSED")

    url = reverse("link-drill", args=[link.destination.name, link.name])
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_as("operator").post(url, follow=True)
    run = DrillRun.objects.filter(link=link).first()
    assert answer.status_code == 200 and run is not None and run.outcome == "FAILED"
    assert "could not hand the drill to the scenario worker" in run.words
    page = client_as("operator").get(reverse("drill-detail", args=[run.pk]))
    assert "is Redis, the task broker, up?" in page.content.decode()
