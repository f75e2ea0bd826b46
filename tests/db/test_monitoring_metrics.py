"""The Grafana dashboard that ships is a dashboard Grafana imports, and every metric it and the
alert rules query is in what /metrics answers (a metric renamed or dropped fails here, not in
someone's silent alerting)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from devstack import kafka
from replication.governance import audit
from replication.models import DrillRun
from replication.topics.mirrors import create_mirror
from tests.monitoring import dashboard, dashboard_queries, exported_metrics, queried_metrics

pytestmark = [pytest.mark.django_db]


def test_the_dashboard_is_one_grafana_imports():
    board = dashboard()
    assert board["uid"] == "isthmus-overview" and board["title"]
    assert [i["type"] for i in board["__inputs"]] == ["datasource"]
    panels = board["panels"]
    assert len({p["id"] for p in panels}) == len(panels), "panel ids are unique"
    for panel in panels:
        x, width = panel["gridPos"]["x"], panel["gridPos"]["w"]
        assert x >= 0 and x + width <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"] and panel["datasource"]["uid"] == "${datasource}"
    titles = " ".join(p["title"] for p in panels)
    for shown in ("Lag in seconds", "RPO target", "Lag in records", "copied per second"):
        assert shown in titles
    for shown in ("Engine", "Clusters answering", "waiting for approval"):
        assert shown in titles
    assert all(expr.strip() for expr in dashboard_queries(board))


def test_every_metric_the_rules_and_the_dashboard_query_is_in_metrics(
    api, make_link, make_topic, topic_name
):
    topic = make_topic(kafka.SOURCE, topic_name)
    link = make_link()
    create_mirror(audit.Actor.system("tests"), link, topic)
    now = timezone.now()
    DrillRun.objects.create(
        link=link, started_by="x", canary="c", outcome="FAILED", finished_at=now
    )
    response = api("viewer").get("/metrics")
    assert response.status_code == 200
    exported = exported_metrics(response.content.decode())

    queried = queried_metrics()
    for used in (
        "isthmus_mirror_partition_lag_seconds",
        "isthmus_link_rpo_target_seconds",
        "isthmus_cluster_reachable",
        "isthmus_approvals_pending",
        "isthmus_engine_running",
        "isthmus_drill_last_success",
    ):
        assert used in queried
    missing = {name: where for name, where in queried.items() if name not in exported}
    assert not missing, f"queried but not in /metrics: {missing}"
