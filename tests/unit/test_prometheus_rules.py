"""The alert rules that ship (monitoring/prometheus/isthmus-rules.yml), checked and unit-tested
with Debian's promtool on series built from a real scrape of /metrics
(tests/contracts/metrics-scrape.txt, whose first lines say how it was captured): every series
of the scrape, kept at its scraped value, is the healthy stack, on which no alert fires; each
alert then fires when the series it watches breaches (the scrape's own series, its value
changed), only once its `for` has passed, with its labels and its words rendered."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.monitoring import RULES, SCRAPE, Sample, alerts, dashboard, dashboard_queries, samples

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is missing: `make setup` installs it (Debian's prometheus package)",
)

MINUTES = 30  # each test's series, one point a minute


@dataclass(frozen=True)
class Breach:
    """`alert` stays silent at `quiet_at` (its `for` not yet passed) and fires at `firing_at`
    with the labels of `labels` and its `$value` shown as `value`, once `series` replace the
    scrape's (a value string of promtool's each, None: the series is gone)."""

    alert: str
    series: dict[str, str | None]
    labels: dict[str, str]
    value: str
    quiet_at: str = "1m"
    firing_at: str = "10m"


def _scraped() -> list[Sample]:
    return samples(SCRAPE.read_text())


def _one(scraped: list[Sample], name: str, **labels: str) -> Sample:
    found = [s for s in scraped if s.name == name and labels.items() <= s.labels.items()]
    assert found, f"the scrape has no {name} {labels or ''}: capture it again (see its top)"
    return found[0]


def _breaches(scraped: list[Sample]) -> list[Breach]:
    """A breach of each alert, on the scrape's own series."""
    active = _one(scraped, "isthmus_link_state", state="ACTIVE")
    link = {k: active.labels[k] for k in ("link", "destination")}
    failed = Sample(active.name, {**active.labels, "state": "FAILED"}, 1)
    lag = _one(scraped, "isthmus_mirror_partition_lag_seconds", **link)
    target = _one(scraped, "isthmus_link_rpo_target_seconds", **link).value
    mirror = {**link, "mirror": lag.labels["mirror"]}
    failures = _one(scraped, "isthmus_link_stream_failures", **link)
    cluster = _one(scraped, "isthmus_cluster_reachable", cluster=link["destination"])
    differing = _one(scraped, "isthmus_mirror_differing_records", **mirror)
    lost = _one(scraped, "isthmus_mirror_records_lost", **mirror)
    behind = target + 150  # seconds
    return [
        Breach(
            "IsthmusMirrorOverRpoTarget",
            {lag.series: f"{behind:g}x{MINUTES}"},
            mirror,
            _duration(behind),
        ),
        Breach(
            "IsthmusLinkFailed",
            {active.series: None, failed.series: f"1x{MINUTES}"},
            failed.labels,
            "1",
            quiet_at="0m",
        ),
        Breach(
            "IsthmusLinkStreamFailing",
            {failures.series: f"2x{MINUTES}"},
            failures.labels,
            "2",
            quiet_at="4m",
        ),
        Breach(
            "IsthmusEngineNotRunning",
            {"isthmus_engine_running": f"0x{MINUTES}"},
            {},
            "0",
            quiet_at="2m",
        ),
        Breach("IsthmusClusterUnreachable", {cluster.series: f"0x{MINUTES}"}, cluster.labels, "0"),
        # Waiting grows a minute a minute: over the hour at 11m, for 5m more.
        Breach(
            "IsthmusApprovalWaitingTooLong",
            {"isthmus_approval_oldest_pending_seconds": f"3000+60x{MINUTES}"},
            {},
            "1h 10m 0s",
            quiet_at="15m",
            firing_at="20m",
        ),
        Breach(
            "IsthmusMirrorDiffersFromSource",
            {differing.series: f"11x{MINUTES}"},
            differing.labels,
            "11",
            quiet_at="0m",
        ),
        # No drill ran in the scrape: its series is the breach's own.
        Breach(
            "IsthmusDrillFailed",
            {Sample("isthmus_drill_last_success", link, 0).series: f"0x{MINUTES}"},
            link,
            "0",
            quiet_at="0m",
        ),
        Breach(
            "IsthmusMirrorRecordsLost",
            {lost.series: f"40x{MINUTES}"},
            lost.labels,
            "40",
            quiet_at="0m",
        ),
    ]


def _duration(seconds: float) -> str:
    """As Prometheus' humanizeDuration says it (whole seconds)."""
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest}s" if minutes else f"{rest}s"


def _render(template: str, labels: dict[str, str], value: str) -> str:
    """An annotation as Prometheus renders it, for the few template forms the rules use."""
    said = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)
    return re.sub(r"\{\{ \$value( \| humanizeDuration)? \}\}", value, said)


def _series(scraped: list[Sample], changed: dict[str, str | None]) -> list[dict[str, str]]:
    kept: dict[str, str | None] = {s.series: f"{s.value:g}x{MINUTES}" for s in scraped}
    kept.update(changed)
    return [{"series": name, "values": values} for name, values in kept.items() if values]


def _promtool(*args: str) -> str:
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_are_valid():
    assert "SUCCESS: 9 rules found" in _promtool("check", "rules", str(RULES))


def test_the_dashboards_queries_are_promql(tmp_path: Path):
    """promtool checks PromQL in rules: each query of the dashboard as a recording rule (its
    `$link` variable as Grafana fills it)."""
    queries = dashboard_queries(dashboard())
    rules = [
        {"record": f"isthmus:dashboard_query_{n}", "expr": expr.replace("$link", ".*")}
        for n, expr in enumerate(queries)
    ]
    checked = tmp_path / "dashboard-queries.yml"
    checked.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert f"SUCCESS: {len(rules)} rules found" in _promtool("check", "rules", str(checked))


def test_each_alert_fires_on_its_breach_and_none_on_the_healthy_scrape(tmp_path: Path):
    scraped = _scraped()
    rules = alerts()
    healthy = {
        "interval": "1m",
        "input_series": _series(scraped, {}),
        "alert_rule_test": [
            {"eval_time": f"{MINUTES - 1}m", "alertname": name, "exp_alerts": []} for name in rules
        ],
    }
    breaches = _breaches(scraped)
    assert {b.alert for b in breaches} == set(rules), "every alert has its breach here"
    tests = [healthy]
    for breach in breaches:
        labels = {**breach.labels, "severity": rules[breach.alert]["labels"]["severity"]}
        annotations = {
            name: _render(text, breach.labels, breach.value)
            for name, text in rules[breach.alert]["annotations"].items()
        }
        tests.append(
            {
                "name": breach.alert,
                "interval": "1m",
                "input_series": _series(scraped, breach.series),
                "alert_rule_test": [
                    {"eval_time": breach.quiet_at, "alertname": breach.alert, "exp_alerts": []},
                    {
                        "eval_time": breach.firing_at,
                        "alertname": breach.alert,
                        "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}],
                    },
                ],
            }
        )
    test_file = tmp_path / "isthmus-rules-test.yml"
    test_file.write_text(
        yaml.safe_dump(
            {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests},
            sort_keys=False,
        )
    )
    _promtool("test", "rules", str(test_file))
