"""A whole drill on the real clusters, with the real stream and Celery beat: on a one-way link
the canary is made on the source, mirrored, failed over, found on the promoted mirror record
by record, and the way back deletes it; nothing of it is left on either cluster. Starting,
scheduling and refusing drills, and the readiness values, are tests/db/test_readiness.py's."""

from __future__ import annotations

import pytest

from devstack import kafka
from replication.governance import audit
from replication.models import AuditEvent, DrillRun, MirrorTopic, canary_topic
from replication.scenarios import drill_steps, drills
from tests.mirror_checks import assert_exact_copy, topic_gone

pytestmark = pytest.mark.integration


def test_a_drill_on_a_one_way_link_fails_its_canary_over_and_leaves_nothing(
    transactional_db, celery_worker, make_link, topic_name, users, monkeypatch
):
    link = make_link(name=f"drill-{topic_name}"[:60])
    actor = audit.Actor(user=users["operator"], name="operator")
    canary = canary_topic(link)
    checked = []

    def exact_then(step: drill_steps.DrillStepSpec) -> drill_steps.DrillStepSpec:
        """The step, once the promoted canary is proved its source's exact copy."""

        def run(d: drill_steps.Drill) -> str:
            checked.extend(assert_exact_copy(canary, d.mirror_topic))
            return step.run(d)

        return drill_steps.DrillStepSpec(step.name, run, step.timing)

    steps = [exact_then(s) if s.run is drill_steps.promoted_exact else s for s in drill_steps.STEPS]
    monkeypatch.setattr(drill_steps, "STEPS", steps)
    monkeypatch.setattr(drills, "hand_over", lambda run, user_pk=None: None)  # (run here)

    run = drills.execute(drills.start(actor, link), actor)

    assert run.outcome == "PASSED", (run.words, run.steps)
    assert [s["name"] for s in run.steps] == [
        *(s.name for s in steps),
        "Delete the promoted canary and its source",
    ]
    assert all(s["passed"] and s["seconds"] >= 0 for s in run.steps)
    assert len(checked) == drill_steps.RECORDS
    assert run.way_back == drill_steps.DELETE and run.cleanup == ""
    assert run.failover_seconds and run.failback_seconds and run.seconds
    assert "holds the 20 records exactly" in run.steps[5]["words"]
    assert not MirrorTopic.objects.filter(link=link).exists()
    topic_gone(kafka.SOURCE, canary)
    topic_gone(kafka.DESTINATION, canary)
    finished = AuditEvent.objects.get(action="drill.finish", target=f"link {link.name}")
    assert finished.result == "ok" and finished.actor_name == "operator"


def test_a_drill_on_a_bidirectional_link_comes_back_by_restore_and_reverse(
    transactional_db, celery_worker, bidirectional, users, monkeypatch
):
    link = bidirectional()
    monkeypatch.setattr(drills, "hand_over", lambda run, user_pk=None: None)  # (run here)
    actor = audit.Actor(user=users["operator"], name="operator")

    run = drills.execute(drills.start(actor, link), actor)

    assert run.outcome == "PASSED", (run.words, run.steps)
    assert run.way_back == drill_steps.RESTORE and run.cleanup == ""
    assert [s["name"] for s in run.steps][-2:] == [
        "Truncate and restore the source canary",
        "Reverse back",
    ]
    assert run.failback_seconds == pytest.approx(sum(s["seconds"] for s in run.steps[-2:]))
    canary = canary_topic(link)
    assert not MirrorTopic.objects.filter(mirror_topic=canary).exists()
    topic_gone(kafka.SOURCE, canary)
    topic_gone(kafka.DESTINATION, canary)
    assert DrillRun.objects.get(pk=run.pk).made == []  # all it made, and only that, removed
