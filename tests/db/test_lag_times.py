"""Lag in seconds, on in-memory clusters: the beat's sample reads the timestamp of the oldest
source record a mirror does not hold yet (once while it stays the same record), keeps its age
beside the lag in records, and every page, the API and /metrics show that reading; a link's RPO
target, set on its page and over the API, breached and met again: on the overview, audited and
told to the operators once each."""

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from replication.governance import audit, notifications
from replication.models import AuditEvent, ClusterLink, Notification
from replication.observe import lag
from replication.topics.mirrors import create_mirror
from tests import memory_kafka

pytestmark = [pytest.mark.django_db]

SETUP = audit.Actor.system("tests")
AGE_S = 150  # how old the records the mirror lacks are


@pytest.fixture
def behind(make_link, make_topic, topic_name, memory_clusters):
    """A paused mirror whose source holds 5 records written AGE_S ago and 2 since, of which it
    holds none: (link, mirror, source cluster, destination cluster)."""
    make_topic(kafka.SOURCE, topic_name, 2)
    link = make_link({"cluster.link.paused": "true"})
    mirror = create_mirror(SETUP, link, topic_name)
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    source.produce(topic_name, 0, 5, at_ms=int((time.time() - AGE_S) * 1000))
    source.produce(topic_name, 0, 2)
    return link, mirror, source, destination


def _reads(monkeypatch) -> list[dict]:
    """The positions each read of source timestamps asked for."""
    asked: list[dict] = []
    real = memory_kafka.MemoryRecords.first_timestamps

    def counted(self, positions, timeout_s=5):
        asked.append(dict(positions))
        return real(self, positions, timeout_s)

    monkeypatch.setattr(memory_kafka.MemoryRecords, "first_timestamps", counted)
    return asked


def _seconds(ms: int) -> float:
    return ms / 1000


def test_the_sample_reads_the_oldest_missing_records_age_once_and_then_lets_it_grow(
    behind, monkeypatch
):
    link, mirror, source, destination = behind
    reads = _reads(monkeypatch)

    lag.sample_all()
    first = lag.latest_of(mirror)
    assert first is not None
    assert first.partitions[0].lag == 7 and first.partitions[0].first_missing == 0
    assert AGE_S <= _seconds(first.partitions[0].lag_ms) < AGE_S + 5
    assert first.partitions[1].lag == 0 and first.partitions[1].lag_ms == 0  # caught up
    assert first.max_lag_ms == first.partitions[0].lag_ms
    # One read, of the one partition behind, at the offset the mirror lacks first.
    assert reads == [{(mirror.source_topic, 0): 0}]

    # Still the same oldest record: no read, and its age grows with the clock.
    time.sleep(1.1)
    lag.sample_all()
    assert len(reads) == 1
    assert lag.latest_of(mirror).partitions[0].lag_ms >= first.partitions[0].lag_ms + 1000

    # The mirror copies the 5 old records: its oldest missing one is a new one, read once.
    destination.produce(mirror.mirror_topic, 0, 5)
    lag.sample_all()
    assert reads[-1] == {(mirror.source_topic, 0): 5}
    assert _seconds(lag.latest_of(mirror).max_lag_ms) < 5

    # Caught up: 0, read from nothing.
    destination.produce(mirror.mirror_topic, 0, 2)
    lag.sample_all()
    assert lag.latest_of(mirror).max_lag_ms == 0 and len(reads) == 2


def test_a_future_timestamp_or_a_source_that_does_not_answer_leaves_it_unknown(
    make_link, make_topic, topic_name, memory_clusters
):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(SETUP, make_link({"cluster.link.paused": "true"}), topic_name)
    ahead = int((time.time() + 3600) * 1000)  # a producer's clock an hour ahead
    memory_clusters["source"].produce(topic_name, 0, 3, at_ms=ahead)
    lag.sample_all()
    assert lag.latest_of(mirror).partitions[0].lag_ms == -1

    memory_clusters["source"].down = True
    lag.sample_all()
    assert lag.latest_of(mirror).partitions == {}  # nothing read, nothing claimed


def test_the_mirror_page_link_page_overview_and_lists_show_the_lag_in_time(behind, client_as):
    link, mirror, *_ = behind
    lag.sample_all()
    client = client_as("viewer")

    page = client.get(reverse("mirror-detail", args=["destination", mirror.mirror_topic]))
    text = page.content.decode()
    # The page reads the offsets now, and keeps the sample's timestamp: the same oldest record.
    assert 'id="recovery-point"' in text and "2 min 3" in text, text
    assert '<td class="lag-time" data-ms="0">0 s</td>' in text  # partition 1, caught up
    assert 'data-chart="Lag in time"' in text

    link_page = client.get(reverse("link-detail", args=["destination", link.name])).content
    assert b'data-chart="Lag in time"' in link_page and b"2 min 3" in link_page
    assert b'id="rpo-target"' in link_page and b"none: set one" in link_page
    overview = client.get(reverse("dashboard")).content.decode()
    assert 'id="stat-lag-time">2 min 3' in overview
    listed = client.get(reverse("mirrors")).content.decode()
    assert "2 min 3" in listed and "behind</small>" in listed


def test_the_api_describe_and_metrics_give_the_lag_in_time(behind, api):
    link, mirror, *_ = behind
    lag.sample_all()
    cluster_id = link.destination.cluster_id
    base = f"/kafka/v3/clusters/{cluster_id}/links/{link.name}"
    described = api("viewer").get(f"{base}/mirrors/{mirror.mirror_topic}").json()
    lags = {p["partition"]: p for p in described["mirror_lags"]}
    assert AGE_S <= _seconds(lags[0]["lag_ms"]) < AGE_S + 5 and lags[1]["lag_ms"] == 0
    assert described["max_lag_ms"] == lags[0]["lag_ms"]
    assert described["rpo_target_seconds"] is None

    metrics = api("viewer").get("/metrics").content.decode()
    ids = f'link="{link.name}",destination="destination",mirror="{mirror.mirror_topic}"'
    [line] = [
        m
        for m in metrics.splitlines()
        if m.startswith(f'isthmus_mirror_partition_lag_seconds{{{ids},partition="0"}}')
    ]
    assert AGE_S <= float(line.split()[-1]) < AGE_S + 5
    assert f'isthmus_mirror_partition_lag_seconds{{{ids},partition="1"}} 0' in metrics
    assert "isthmus_link_rpo_target_seconds{" not in metrics  # no target, no sample


def test_the_rpo_target_is_set_on_the_links_page_and_over_the_api_and_checked(
    behind, client_as, api
):
    link = behind[0]
    url = reverse("link-rpo-target", args=["destination", link.name])
    assert client_as("viewer").post(url, {"rpo_target_seconds": "60"}).status_code == 403
    refused = client_as("operator").post(url, {"rpo_target_seconds": "soon"}, follow=True)
    assert "whole number of seconds from 1 to 31,536,000" in refused.content.decode()
    client_as("operator").post(url, {"rpo_target_seconds": "60"})
    link.refresh_from_db()
    assert link.rpo_target_seconds == 60
    event = AuditEvent.objects.filter(action="link.rpo_target").latest("pk")
    assert (event.actor_name, event.after) == ("operator", {"rpo_target_seconds": 60})

    put = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/rpo-target"
    body = json.dumps({"rpo_target_seconds": 0})
    wrong = api("operator").put(put, body, content_type="application/json")
    assert wrong.status_code == 400 and "whole number of seconds" in wrong.json()["message"]
    extra = json.dumps({"rpo_target_seconds": 5, "more": 1})
    assert api("operator").put(put, extra, content_type="application/json").status_code == 400
    none = json.dumps({"rpo_target_seconds": None})
    assert api("viewer").put(put, none, content_type="application/json").status_code == 403
    assert api("operator").put(put, none, content_type="application/json").status_code == 204
    link.refresh_from_db()
    assert link.rpo_target_seconds is None
    answer = api("viewer").get(put.removesuffix("/rpo-target")).json()
    assert answer["rpo_target_seconds"] is None and answer["rpo_breached_since"] is None


def test_a_breach_shows_on_the_overview_and_is_told_once_and_once_more_when_met(
    behind, users, client_as, api
):
    link, mirror, source, destination = behind
    ClusterLink.objects.filter(pk=link.pk).update(rpo_target_seconds=60)

    lag.sample_all()
    link.refresh_from_db()
    assert link.rpo_breached_at is not None
    told = Notification.objects.filter(event="link.rpo_breached")
    # The operators and admins: those who may promote or fail over.
    assert sorted(n.user.username for n in told) == ["admin", "operator"]
    assert told[0].text.startswith(
        f"Link {link.name}: mirror {mirror.mirror_topic} is 2 min 3"
    ) and told[0].text.endswith("over the link's RPO target of 60 s.")
    event = AuditEvent.objects.get(action="link.rpo_breached")
    assert event.actor_name == "system (lag)" and mirror.mirror_topic in event.topics

    overview = client_as("viewer").get(reverse("dashboard")).content.decode()
    assert '<span class="stat-value" id="stat-troubled">1</span>' in overview
    assert f'data-mirror="{mirror.mirror_topic}"' in overview
    assert "behind its source, over the link&#x27;s RPO target of 60 s." in overview
    assert "data-rpo-breached" in overview and "RPO target 60 s" in overview
    metrics = api("viewer").get("/metrics").content.decode()
    target = f'isthmus_link_rpo_target_seconds{{link="{link.name}",destination="destination"}} 60'
    assert target in metrics

    lag.sample_all()  # still breached: told once
    assert Notification.objects.filter(event="link.rpo_breached").count() == 2
    source.down = True  # not known any more: not met either
    lag.sample_all()
    link.refresh_from_db()
    assert link.rpo_breached_at is not None and not Notification.objects.filter(
        event="link.rpo_met"
    )
    source.down = False

    destination.produce(mirror.mirror_topic, 0, 7)  # caught up
    lag.sample_all()
    link.refresh_from_db()
    assert link.rpo_breached_at is None
    met = Notification.objects.filter(event="link.rpo_met")
    assert met.count() == 2 and "every mirror is back within" in met[0].text
    assert AuditEvent.objects.filter(action="link.rpo_met").count() == 1
    overview = client_as("viewer").get(reverse("dashboard")).content.decode()
    assert '<span class="stat-value" id="stat-troubled">0</span>' in overview


def test_the_webhook_hears_of_a_breach_once_however_many_operators_are_told(users, settings):
    settings.NOTIFY_WEBHOOK_URL = "http://127.0.0.1:9/hook"  # nothing listens: it fails
    first, *others = notifications.tell_operators("link.rpo_breached", "Link ab: …")
    assert others and all(
        n.delivery == {"webhook": f"with notification {first.pk}"} for n in others
    )
    assert notifications.send(first) is False  # tried again later, by the task
    assert first.delivery["webhook"].startswith("failed: the webhook did not answer")
    assert all(notifications.send(n) for n in others)  # posted with the first, not again


def test_two_links_from_one_source_behind_on_one_topic_each_get_their_own_lag_in_time(
    make_link, make_topic, topic_name, memory_clusters, monkeypatch
):
    make_topic(kafka.SOURCE, topic_name)
    paused = {"cluster.link.paused": "true"}
    first = create_mirror(SETUP, make_link(paused), topic_name)
    second = create_mirror(SETUP, make_link({**paused, "cluster.link.prefix": "b."}), topic_name)
    source, destination = memory_clusters["source"], memory_clusters["destination"]
    source.produce(topic_name, 0, 5, at_ms=int((time.time() - AGE_S) * 1000))
    source.produce(topic_name, 0, 2)
    destination.produce(second.mirror_topic, 0, 5)  # the second holds the 5 old records
    reads = _reads(monkeypatch)

    lag.sample_all()
    # One source, one client config: a read per offset wanted of the partition, not one that
    # the other link's offset overwrote (which left its lag in time unknown sample after sample).
    assert sorted(r[topic_name, 0] for r in reads) == [0, 5]
    assert AGE_S <= _seconds(lag.latest_of(first).max_lag_ms) < AGE_S + 5
    assert 0 <= _seconds(lag.latest_of(second).max_lag_ms) < 5


def test_a_mirror_with_a_partition_of_unknown_age_behind_is_unknown_and_ends_no_breach(
    make_link, make_topic, topic_name, memory_clusters
):
    make_topic(kafka.SOURCE, topic_name, 2)
    link = make_link({"cluster.link.paused": "true"})
    mirror = create_mirror(SETUP, link, topic_name)
    ClusterLink.objects.filter(pk=link.pk).update(
        rpo_target_seconds=60, rpo_breached_at=timezone.now()
    )
    source = memory_clusters["source"]
    source.produce(topic_name, 0, 3, at_ms=int((time.time() + 3600) * 1000))  # age unknown

    lag.sample_all()
    reading = lag.latest_of(mirror)
    assert (reading.partitions[0].lag_ms, reading.partitions[1].lag_ms) == (-1, 0)
    assert reading.max_lag_ms == -1  # not 0: partition 0 may be the furthest behind
    link.refresh_from_db()
    assert link.rpo_breached_at is not None  # so the breach goes on
    assert not AuditEvent.objects.filter(action="link.rpo_met").exists()

    # What is known of it is over the target alone: a breach begins, unknown part or not.
    ClusterLink.objects.filter(pk=link.pk).update(rpo_breached_at=None)
    source.produce(topic_name, 1, 2, at_ms=int((time.time() - AGE_S) * 1000))
    lag.sample_all()
    assert lag.latest_of(mirror).max_lag_ms == -1
    link.refresh_from_db()
    assert link.rpo_breached_at is not None
    assert AuditEvent.objects.filter(action="link.rpo_breached").count() == 1


def test_a_fetch_reported_while_the_clusters_are_read_is_zero_ms_ago_never_negative(
    make_link, make_topic, topic_name, memory_clusters, monkeypatch
):
    # The read takes its time before it asks the clusters; a fetch the engine reports in the
    # meantime is newer than that time (Kafka's tools print it as 0, never below).
    make_topic(kafka.SOURCE, topic_name, 1)
    mirror = create_mirror(SETUP, make_link(), topic_name)
    fetched = {"source_hw": 0, "run": [0, 0], "translated": False, "read_upto": -1}
    later = int((time.time() + 5) * 1000)
    monkeypatch.setattr(
        lag.status,
        "progress",
        lambda link: lag.status.Progress({mirror.mirror_topic: {"0": fetched}}, later),
    )
    [partition] = lag.describe_mirror(mirror).partitions
    assert partition.time_since_last_fetch_ms == 0
