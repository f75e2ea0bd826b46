"""What the monitoring tests share: the alert rules and the Grafana dashboard that ship in
monitoring/, the metrics they query, and a scrape of /metrics read as series."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import yaml

from tests.conftest import ROOT

RULES = ROOT / "monitoring" / "prometheus" / "isthmus-rules.yml"
DASHBOARD = ROOT / "monitoring" / "grafana" / "isthmus-dashboard.json"
# A real scrape of /metrics, as its first lines say how it was captured.
SCRAPE = ROOT / "tests" / "contracts" / "metrics-scrape.txt"

_METRIC = re.compile(r"\bisthmus_[a-z0-9_]+")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def alerts() -> dict[str, dict]:
    """Each alerting rule by its name."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def dashboard_queries(board: dict) -> list[str]:
    """The dashboard's PromQL: its panels' queries (rows' nested ones too) and its
    annotations'."""
    found = []
    panels = list(board["panels"])
    while panels:
        panel = panels.pop()
        panels += panel.get("panels", [])
        found += [target["expr"] for target in panel.get("targets", [])]
    return found + [a["expr"] for a in board["annotations"]["list"] if "expr" in a]


def queried_metrics() -> dict[str, set[str]]:
    """Each of our metrics the rules and the dashboard (its variables too) query, with where."""
    board = dashboard()
    queries = [(f"rule {name}", rule["expr"]) for name, rule in alerts().items()]
    queries += [("the dashboard", expr) for expr in dashboard_queries(board)]
    queries += [
        ("the dashboard's variables", v["definition"])
        for v in board["templating"]["list"]
        if v["type"] == "query"
    ]
    found: dict[str, set[str]] = {}
    for where, expr in queries:
        for name in _METRIC.findall(expr):
            found.setdefault(name, set()).add(where)
    return found


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float

    @property
    def series(self) -> str:
        """As promtool's input series names it."""
        inside = ",".join(f'{k}="{v}"' for k, v in self.labels.items())
        return f"{self.name}{{{inside}}}" if inside else self.name


def samples(text: str) -> list[Sample]:
    """The samples of a scrape in Prometheus' text format (comments left out)."""
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample of the text format: {line!r}"
        name, labels, value = match.groups()
        found.append(Sample(name, dict(_LABEL.findall(labels or "")), float(value)))
    return found


def exported_metrics(text: str) -> set[str]:
    """The metrics a scrape declares (its TYPE lines), with samples or not."""
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
