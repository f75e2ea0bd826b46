"""DR readiness and drills on in-memory clusters: each promote precondition yes or no with why
(caught up, consumer groups synced, schemas synced), the readiness page, its API answer and
/metrics; starting a drill (one at a time per link, refused on a link that is not running,
audited), its schedule (due or not, started once by two beats at once, a refusal kept) and a
drill no worker finished. A whole drill, with an engine copying, is
tests/integration/test_drills.py's."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import (
    AuditEvent,
    ClusterLink,
    DrillRun,
    DrillSchedule,
    GroupOffsetSync,
    SchemaSubjectSync,
    canary_topic,
)
from replication.observe import lag
from replication.overview import dashboard, metrics, readiness
from replication.scenarios import drills
from replication.topics import links
from replication.topics.mirrors import create_mirror

pytestmark = [pytest.mark.django_db]

SETUP = audit.Actor.system("tests")
OPERATOR = audit.Actor(name="operator")


@pytest.fixture(autouse=True)
def handed_over(monkeypatch) -> list[int]:
    """The drills handed to the scenario worker (none runs here)."""
    handed: list[int] = []
    monkeypatch.setattr(drills, "hand_over", lambda run, user_pk=None: handed.append(run.pk))
    return handed


@pytest.fixture
def mirrored(make_link, make_topic, topic_name, memory_clusters):
    """A mirror of a 2-partition topic holding `source` records per partition on the source and
    `copied` on the destination (no engine copies here), its lag read as the beat reads it."""

    def make(source: int = 3, copied: int = 3, **configs: str):
        make_topic(kafka.SOURCE, topic_name, 2)
        link = make_link(configs)
        mirror = create_mirror(SETUP, link, topic_name)
        for p in range(2):
            memory_clusters["source"].produce(topic_name, p, source)
            memory_clusters["destination"].produce(topic_name, p, copied)
        lag.sample_all()
        return link, mirror

    return make


def _mirror_readiness(link: ClusterLink) -> readiness.MirrorReadiness:
    [found] = readiness.link_readiness(link).mirrors
    return found


def test_a_caught_up_mirror_is_caught_up_and_one_behind_says_by_how_much(mirrored):
    link, mirror = mirrored(source=3, copied=3)
    found = _mirror_readiness(link)
    assert found.caught_up.met and "Lag 0 on every partition" in found.caught_up.why
    assert found.lag_ms == 0 and found.records_behind == 0

    reading = lag.latest_of(mirror)
    assert reading is not None
    stale = readiness.caught_up(mirror, reading, now=reading.at + 120)
    assert not stale.met and "too long to say" in stale.why
    assert not readiness.caught_up(mirror, None).met


def test_a_mirror_behind_is_not_caught_up(mirrored):
    link, _ = mirrored(source=5, copied=2)
    check = _mirror_readiness(link).caught_up
    assert not check.met
    assert "partition 0 lags 3 records" in check.why and "partition 1 lags 3" in check.why


def test_consumer_groups_synced_says_which_group_is_not_in_step_and_when_sync_is_off(mirrored):
    link, mirror = mirrored()
    check = _mirror_readiness(link).groups_synced
    assert not check.met and "Consumer offset sync is off" in check.why

    links.alter_link_configs(
        SETUP,
        link,
        {
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": '{"groupFilters": [{"name": "*", '
            '"patternType": "LITERAL", "filterType": "INCLUDE"}]}',
        },
    )
    link.refresh_from_db()
    assert _mirror_readiness(link).groups_synced.met  # no group to move
    key = f"{mirror.mirror_topic}/0"
    GroupOffsetSync.objects.create(
        link=link, group="billing", destination_group="billing", state="IN_STEP", offsets={key: 2}
    )
    check = _mirror_readiness(link).groups_synced
    assert check.met and "1 group in step" in check.why
    GroupOffsetSync.objects.create(
        link=link,
        group="audit",
        destination_group="audit",
        state="SKIPPED",
        reason="it has active members on the destination",
        offsets={key: 1},
    )
    check = _mirror_readiness(link).groups_synced
    assert not check.met
    assert "audit (skipped: it has active members on the destination)" in check.why


def test_schemas_synced_is_met_when_sync_is_off_and_not_while_a_subject_conflicts(mirrored):
    link, mirror = mirrored()
    check = _mirror_readiness(link).schemas_synced
    assert check.met and "Schema sync is off" in check.why

    links.alter_link_configs(SETUP, link, {"schema.sync.enable": "true"})
    link.refresh_from_db()
    check = _mirror_readiness(link).schemas_synced
    assert not check.met and "has not run yet" in check.why

    ClusterLink.objects.filter(pk=link.pk).update(schemas_synced_at=timezone.now())
    link.refresh_from_db()
    SchemaSubjectSync.objects.create(
        link=link,
        subject=f"{mirror.source_topic}-value",
        state="CONFLICT",
        message="the destination holds another schema under id 7",
    )
    check = _mirror_readiness(link).schemas_synced
    assert not check.met and "CONFLICT: the destination holds another schema" in check.why
    SchemaSubjectSync.objects.filter(link=link).update(state="IN_STEP", message="")
    check = _mirror_readiness(link).schemas_synced
    assert check.met and f"{mirror.source_topic}-value in step" in check.why


def test_the_rpo_now_is_against_the_links_target(mirrored):
    link, _ = mirrored(source=3, copied=3)
    ClusterLink.objects.filter(pk=link.pk).update(rpo_target_seconds=60)
    link.refresh_from_db()
    found = readiness.link_readiness(link)
    assert (found.rpo_ms, found.target_s, found.over_target) == (0, 60, False)


def test_the_page_shows_each_precondition_and_only_operators_may_drill(mirrored, client_as):
    link, mirror = mirrored(source=4, copied=1)
    page = client_as("viewer").get(reverse("readiness")).content.decode()
    assert link.name in page and mirror.mirror_topic in page
    assert 'data-check="caught up" data-met="no"' in page and "partition 0 lags 3 records" in page
    assert "Consumer offset sync is off" in page and "never drilled" in page
    assert "Drill now" not in page
    page = client_as("operator").get(reverse("readiness")).content.decode()
    assert "Drill now" in page and 'name="every_hours"' in page
    assert reverse("readiness") in client_as("viewer").get(reverse("dashboard")).content.decode()


def test_the_api_answers_a_links_readiness(mirrored, api):
    link, mirror = mirrored(source=3, copied=3)
    drill = DrillRun.objects.create(
        link=link,
        started_by="operator",
        canary=canary_topic(link),
        outcome="PASSED",
        way_back="delete",
        failover_seconds=1.5,
        failback_seconds=0.5,
        steps=[{"name": "Fail the mirror over", "seconds": 1.5, "words": "ok", "passed": True}],
        finished_at=timezone.now(),
    )
    url = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/readiness"
    body = api("viewer").get(url).json()
    assert body["link_name"] == link.name and body["rpo_lag_ms"] == 0
    [m] = body["mirrors"]
    assert m["mirror_topic_name"] == mirror.mirror_topic
    assert m["caught_up"]["met"] is True and m["consumer_groups_synced"]["met"] is False
    assert body["last_drill"]["id"] == drill.pk and body["last_drill"]["way_back"] == "delete"
    assert body["drill_schedule"] == {"enabled": False, "every_hours": None, "next_due": None}
    missing = api("viewer").get(url.replace(link.name, "nope"))
    assert missing.status_code == 404


def test_an_operator_starts_a_drill_once_at_a_time_audited(
    make_link, client_as, handed_over, django_capture_on_commit_callbacks
):
    link = make_link()
    client = client_as("operator")
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(reverse("link-drill", args=[link.destination.name, link.name]))
    run = DrillRun.objects.get(link=link)
    assert answer.status_code == 302 and answer.url == reverse("drill-detail", args=[run.pk])
    assert (run.outcome, run.canary, handed_over) == ("RUNNING", canary_topic(link), [run.pk])

    answer = client.post(
        reverse("link-drill", args=[link.destination.name, link.name]), follow=True
    )
    assert "is under way" in answer.content.decode() and DrillRun.objects.count() == 1
    events = AuditEvent.objects.filter(action="drill.start").values_list("result", flat=True)
    assert list(events.order_by("pk")) == ["ok", "refused"]
    page = client.get(reverse("drill-detail", args=[run.pk])).content.decode()
    assert "isthmus-drill." in page and "Waiting for the scenario worker" in page


def test_a_drill_of_a_paused_link_or_of_an_unregistered_source_is_refused_with_words(make_link):
    paused = make_link({"cluster.link.paused": "true"})
    with pytest.raises(ReplicationError, match="is PAUSED: .* resume it, then drill"):
        drills.start(OPERATOR, paused)
    running = make_link()
    ClusterLink.objects.filter(pk=running.pk).update(source_cluster_id="elsewhere")
    running.refresh_from_db()
    with pytest.raises(
        ReplicationError, match="is not registered: .* Register it on the Clusters page"
    ):
        drills.start(OPERATOR, running)
    assert not DrillRun.objects.exists()


def test_the_schedule_starts_a_due_drill_once_and_keeps_a_refusal(
    make_link, handed_over, django_capture_on_commit_callbacks
):
    link, paused = make_link(), make_link({"cluster.link.paused": "true"})
    for which in (link, paused):
        drills.set_schedule(OPERATOR, which, 6, True)
    now = timezone.now()
    assert drills.start_due(now) == []  # not due for 6 h
    later = now + timedelta(hours=6, minutes=1)
    with django_capture_on_commit_callbacks(execute=True):
        [started] = drills.start_due(later)
    assert started.link == link and handed_over == [started.pk]
    assert drills.start_due(later) == []  # the beat again at once: nothing more is due
    assert DrillSchedule.objects.get(link=link).next_due == later + timedelta(hours=6)
    refused = DrillRun.objects.get(link=paused)
    assert refused.outcome == "REFUSED" and "resume it, then drill" in refused.words

    # Due again while the first still runs: refused, never a second at once.
    drills.start_due(later + timedelta(hours=6, minutes=1))
    assert DrillRun.objects.filter(link=link, outcome="RUNNING").count() == 1
    assert "under way" in DrillRun.objects.filter(link=link, outcome="REFUSED").get().words


def test_a_schedule_turned_off_is_never_due_and_bad_hours_are_refused(make_link, client_as):
    link = make_link()
    url = reverse("link-drill-schedule", args=[link.destination.name, link.name])
    answer = client_as("operator").post(url, {"every_hours": "0", "enabled": "on"}, follow=True)
    assert "whole number of hours from 1 to 8,760" in answer.content.decode()
    client_as("operator").post(url, {"every_hours": "12"})
    schedule = DrillSchedule.objects.get(link=link)
    assert (schedule.enabled, schedule.every_hours, schedule.next_due) == (False, 12, None)
    assert drills.start_due(timezone.now() + timedelta(days=400)) == []


def test_a_drill_no_worker_finished_ends_failed_and_the_next_may_start(make_link):
    link = make_link()
    old = drills.start(OPERATOR, link)
    DrillRun.objects.filter(pk=old.pk).update(started_at=timezone.now() - timedelta(hours=1))
    new = drills.start(OPERATOR, link)
    old.refresh_from_db()
    assert old.outcome == "FAILED" and "No worker finished it" in old.words
    assert new.outcome == "RUNNING"


def test_metrics_give_each_links_last_drill(make_link):
    link = make_link()
    started = timezone.now() - timedelta(seconds=42)
    DrillRun.objects.create(
        link=link,
        started_by="x",
        canary="c",
        outcome="PASSED",
        started_at=started,
        finished_at=started + timedelta(seconds=40),
    )
    DrillRun.objects.create(
        link=link, started_by="x", canary="", outcome="REFUSED", finished_at=timezone.now()
    )
    text = metrics.prometheus_text()
    ids = f'link="{link.name}",destination="{link.destination.name}"'
    assert f"isthmus_drill_last_success{{{ids}}} 1" in text
    assert f"isthmus_drill_last_duration_seconds{{{ids}}} 40" in text
    stamp = round((started + timedelta(seconds=40)).timestamp())
    assert f"isthmus_drill_last_run_timestamp_seconds{{{ids}}} {stamp}" in text


def test_a_drills_canary_behind_breaches_no_rpo_target_and_is_no_mirror_of_readiness(
    make_link, make_topic, memory_clusters
):
    link = make_link({"cluster.link.paused": "true"})
    ClusterLink.objects.filter(pk=link.pk).update(rpo_target_seconds=1)
    link.refresh_from_db()
    canary = canary_topic(link)
    make_topic(kafka.SOURCE, canary)
    create_mirror(SETUP, link, canary, canary=True)
    memory_clusters["source"].produce(canary, 0, 5, at_ms=int((time.time() - 600) * 1000))
    lag.sample_all()
    assert lag.latest(link)[canary].max_lag_ms > 1000  # far over the target
    link.refresh_from_db()
    assert link.rpo_breached_at is None
    assert readiness.link_readiness(link).mirrors == []
    [summary] = dashboard.link_summaries([link])
    assert (summary.over_rpo, summary.worst_lag_ms) == ({}, -1)
    assert f'mirror="{canary}"' not in metrics.prometheus_text()


def _drilled_link(make_link, make_topic) -> ClusterLink:
    """A link with two mirrors and two drills, one of them finished."""
    link = make_link()
    for n in range(2):
        name = make_topic(kafka.SOURCE, f"{link.name}-{n}")
        create_mirror(SETUP, link, name)
    for outcome in ("PASSED", "FAILED"):
        DrillRun.objects.create(
            link=link, started_by="x", canary="c", outcome=outcome, finished_at=timezone.now()
        )
    return link


def test_the_polled_page_asks_the_database_as_often_whatever_the_number_of_links(
    make_link, make_topic, client_as, django_assert_max_num_queries
):
    client = client_as("operator")
    polled = {"HTTP_HX_REQUEST": "true"}
    first = _drilled_link(make_link, make_topic)
    client.get(reverse("readiness"), **polled)  # (the session's first reads)
    with CaptureQueriesContext(connection) as one:
        client.get(reverse("readiness"), **polled)
    for _ in range(4):
        _drilled_link(make_link, make_topic)
    with django_assert_max_num_queries(len(one)):
        answer = client.get(reverse("readiness"), **polled).content.decode()
    assert answer.count('hx-swap-oob="true"') == 2 * 5
    # What an operator types in the schedule form is never in what the poll swaps.
    assert 'name="every_hours"' not in answer and f'id="facts-{first.pk}"' in answer
    page = client.get(reverse("readiness")).content.decode()
    assert 'name="every_hours"' in page and 'hx-swap="none"' in page
    [found] = readiness.readiness([first])
    assert found.last_drill is not None and found.last_drill.outcome == "FAILED"
    assert [d.outcome for d in found.drills] == ["FAILED", "PASSED"]
