"""A real Prometheus (Debian's package) scraping the console's /metrics with the alert rules
that ship: while a link with an RPO target copies under load the RPO alert stays silent; once
the link is paused, its mirror falls behind the target and the alert fires, naming the link and
the mirror. The scrape it checks is kept in its tmp_path as scrape.txt: the unit tests' series
(tests/contracts/metrics-scrape.txt) were captured that way, and it still has their metrics."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from devstack import kafka
from infra.processes import wait_for
from replication.engine import supervise
from replication.observe import lag, rpo
from replication.tasks import refresh_clusters
from replication.topics.links import pause_link
from replication.topics.mirrors import create_mirror
from tests.integration.test_devstack import free_port
from tests.mirror_checks import ACTOR, run_until_copied
from tests.monitoring import RULES, SCRAPE, samples

PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        PROMETHEUS is None,
        reason="prometheus is missing: `make setup` installs it (Debian's prometheus package)",
    ),
]

TARGET_S = 5  # the link's RPO target
ALERT = "IsthmusMirrorOverRpoTarget"


@contextlib.contextmanager
def _load(topic: str, per_second: int = 200) -> Iterator[None]:
    """Records stamped now, written on a thread of its own while the block runs."""
    done = threading.Event()

    def write() -> None:
        producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 5})
        while not done.is_set():
            for _ in range(per_second // 10):
                producer.produce(topic, value=b"x" * 100)
            producer.poll(0)
            time.sleep(0.1)
        producer.flush(30)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield
    finally:
        done.set()
        writer.join(60)


class Prometheus:
    """A Prometheus on loopback in `folder`, scraping `target`'s /metrics every second with
    `token`, evaluating the shipped rules every second; their `for` cut to 2 s (promtool's tests
    hold the minutes; this one the expressions on a live scrape)."""

    def __init__(self, folder: Path, target: str, token: str):
        rules = folder / "rules.yml"
        rules.write_text(re.sub(r"for: \d+m", "for: 2s", RULES.read_text()))
        credentials = folder / "token"
        credentials.write_text(token)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "isthmus",
                    "metrics_path": "/metrics",
                    "authorization": {"credentials_file": str(credentials)},
                    "static_configs": [{"targets": [target]}],
                }
            ],
        }
        (folder / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = folder / "prometheus.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    str(PROMETHEUS),
                    f"--config.file={folder / 'prometheus.yml'}",
                    f"--storage.tsdb.path={folder / 'data'}",
                    f"--web.listen-address={self.url.removeprefix('http://')}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def get(self, path: str, **query: str) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 - our Prometheus
            return json.load(answer)["data"]

    def alerts(self, name: str) -> list[dict]:
        return [a for a in self.get("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == name]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def said(self) -> str:
        return self.log.read_text()[-3000:]


def _beat(link) -> None:
    """What the beat does every few seconds: supervise the stream, read every mirror's lag."""
    supervise.supervise(link)
    lag.sample_all()


def test_a_real_prometheus_fires_the_rpo_alert_once_a_link_is_paused_under_load(
    live_server, tokens, make_link, make_topic, topic_name, tmp_path
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    link = make_link()
    rpo.set_target(ACTOR, link, TARGET_S)
    mirror = create_mirror(ACTOR, link, topic_name)
    run_until_copied(link, [mirror])
    refresh_clusters()  # the beat's probe of the clusters, every 30 s
    prometheus = Prometheus(tmp_path, live_server.url.removeprefix("http://"), tokens["viewer"])
    ids = {"link": link.name, "mirror": topic_name}
    try:
        with _load(topic_name):
            # Copying: Prometheus scrapes the mirror's lag in seconds, under the target, and
            # the alert stays silent.
            def scraped_healthy() -> bool:
                _beat(link)
                found = prometheus.get(
                    "/api/v1/query",
                    query=f'isthmus_mirror_partition_lag_seconds{{link="{link.name}"}}',
                )
                return len(found["result"]) == 2 and not prometheus.alerts(ALERT)

            assert wait_for(scraped_healthy, 60, 1), prometheus.said()
            for _ in range(4):  # longer than the rule's `for`: it would be firing by now
                _beat(link)
                time.sleep(1)
            assert not prometheus.alerts(ALERT), prometheus.alerts(ALERT)
            _keep_scrape(tmp_path, live_server.url, tokens["viewer"])

            pause_link(ACTOR, link)

            def firing() -> list[dict]:
                _beat(link)
                return [a for a in prometheus.alerts(ALERT) if a["state"] == "firing"]

            fired = wait_for(firing, 90, 1)
            assert fired, prometheus.said()
    finally:
        prometheus.stop()
    labels = fired[0]["labels"]
    assert {k: labels[k] for k in ("link", "mirror")} == ids
    assert labels["severity"] == "critical" and float(fired[0]["value"]) > TARGET_S
    assert "is over its RPO target" in fired[0]["annotations"]["summary"]


def _keep_scrape(folder: Path, url: str, token: str) -> None:
    """Keep the healthy scrape (scrape.txt), and check that every metric of the unit tests'
    captured one is still in it."""
    asked = urllib.request.Request(  # noqa: S310 - the test's own server
        f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(asked, timeout=10) as answer:  # noqa: S310
        text = answer.read().decode()
    (folder / "scrape.txt").write_text(text)
    captured = {s.name for s in samples(SCRAPE.read_text())}
    assert captured <= {s.name for s in samples(text)}
