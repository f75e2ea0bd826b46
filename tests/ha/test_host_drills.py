"""Host drills (issue 45, item 3), on the devstack's two hosts (ISTHMUS_DEVSTACK_HOSTS=2,
devstack/hosts.py: each host a process group of its own, its engine in it; PostgreSQL and the
Kafka clusters outside both). While a writer fills the source steadily and the engine copies it:
(a) host A is killed whole (`kill -9` of its group: console, workers, beat, Redis master,
engine); (b) then only the Redis master; (c) then only the engine's host. Each time copying
resumes on the survivor within 30 s, its console answers a logged-in page, an approval asked
before the kill (on the host that then dies) is approved on the survivor and executes, and the
killed part comes back with no second engine and no second active beat. The gap in copying is
measured from record timestamps (tests/copy_gaps.py), and the mirror is compared record by
record at the end.

The tests run in order on one deployment (the module's): each drill starts where the last one
left it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
import redis
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from django.conf import settings
from redis.sentinel import Sentinel

from devstack import hosts, kafka
from infra import processes
from infra.admin_client import AdminClient
from replication.engine import process
from spark_jobs import control
from tests import leftovers
from tests.conftest import admin_config
from tests.copy_gaps import MirrorTail, StampedWriter, Timeline
from tests.mirror_checks import assert_exact_copy, eventually

# The first test starts the two hosts (minutes on a busy machine), and each waits out a takeover.
pytestmark = [pytest.mark.ha, pytest.mark.usefixtures("devstack"), pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS, PER_SECOND = 4, 2_000
RESUMED_WITHIN_S = 30  # the bound: copying again on the survivor
ENGINE = process.engine_id("isthmus")  # the deployment's: its database is `isthmus`
SENTINELS = [("127.0.0.1", kafka.port(p)) for p in (26381, 26382, hosts.WITNESS_PORT)]
PASSWORD = "drill-password-1"  # noqa: S105 (a throwaway user's)

SETUP = """
import json
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.topics.link_creation import create_link
from replication.topics.mirrors import create_mirror
from tests.ha.drill_setup import users_and_clusters
actor = audit.Actor.system("host drills")
tokens, clusters = users_and_clusters(actor, PASSWORD)
link = create_link(actor, clusters["destination"], "drills", {}, source=clusters["source"])
for topic in TOPICS:  # a busy destination may make a topic too slowly: tried again
    for attempt in range(3):
        try:
            create_mirror(actor, link, topic)
            break
        except ReplicationError:
            if attempt == 2:
                raise
print(json.dumps({"tokens": tokens, "destination": clusters["destination"].cluster_id}))
"""


@dataclass
class Deployment:
    """The two hosts as the drills reach them: `manage.py` with their settings, their consoles
    over HTTP, Redis through their Sentinels."""

    env: dict[str, str]
    tokens: dict[str, str] = field(default_factory=dict)
    destination: str = ""

    def manage(self, *args: str, timeout: float = 600) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        return done.stdout

    def redis(self):
        return Sentinel(SENTINELS, socket_timeout=2).master_for("isthmus", socket_timeout=2)

    def engine(self) -> control.EngineHeartbeat:
        return _through_failover(lambda: control.engine_heartbeat(self.redis(), ENGINE))

    def active_beat(self) -> str:
        found = _through_failover(lambda: self.redis().get(f"isthmus:beat:{ENGINE}:active") or "")
        return json.loads(found)["host"] if found else ""

    def api(self, host: str, role: str, method: str, path: str, body: dict | None = None):
        port = hosts.by_name(host).web_port
        url = f"http://127.0.0.1:{port}/kafka/v3/clusters/{self.destination}/{path}"
        auth = {"Authorization": f"Bearer {self.tokens[role]}"}
        answer = requests.request(method, url, json=body, headers=auth, timeout=60)
        assert answer.status_code < 300, (answer.status_code, answer.text[:2000])
        return answer.json()

    def ask_promote(self, host: str, topic: str) -> str:
        """The operator asks, on `host`'s console, to promote the mirror of `topic`: an
        approval request, whose id this is."""
        asked = self.api(
            host,
            "operator",
            "POST",
            "links/drills/mirrors:promote",
            {"mirror_topic_names": [topic], "reason": "host drill"},
        )
        return asked["approval_request"]["id"]

    def approve(self, host: str, request: str) -> float:
        """The approver approves on `host`'s console; seconds until it executed."""
        began = time.monotonic()
        path = f"approval-requests/{request}"
        self.api(host, "approver", "POST", f"{path}:approve", {})

        def done() -> str | None:
            state = self.api(host, "operator", "GET", path)["state"]
            return state if state != "APPROVED" else None

        assert eventually(done, 180, "the approved promote") == "EXECUTED"
        return time.monotonic() - began

    def page(self, host: str, path: str = "/data-plane/") -> str:
        """A page of `host`'s console as the operator sees it once logged in."""
        base = f"http://127.0.0.1:{hosts.by_name(host).web_port}"
        with requests.Session() as browser:
            form = browser.get(f"{base}/login/", timeout=60).text
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
            assert token is not None, form[:2000]
            browser.post(
                f"{base}/login/",
                data={
                    "csrfmiddlewaretoken": token[1],
                    "username": "operator",
                    "password": PASSWORD,
                },
                headers={"Referer": f"{base}/login/"},
                timeout=60,
            )
            shown = browser.get(f"{base}{path}", timeout=60)
        assert shown.status_code == 200 and "/login/" not in shown.url, shown.url
        return shown.text


def _through_failover(read):
    """`read()` from Redis, waiting out a failover (no master for a few seconds)."""
    answer: list = []
    processes.wait_for(lambda: answer.append(read()) or True, 60, ignore=(redis.RedisError,))
    assert answer, "Redis answered nothing for 60 s"
    return answer[0]


def _other_than(host: str) -> str:
    return next(h.name for h in hosts.HOSTS if h.name != host)


def _engine_processes(host: str) -> list[int]:
    """The engine's processes on `host`: those carrying its engine's mark (infra/processes.py)."""
    mark = str(hosts.by_name(host).stream_dir(settings.VAR_DIR) / f"engine-{ENGINE}" / "engine.pid")
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(processes.MARK) == mark and proc.status() != "zombie":
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def _admin(node: kafka.KafkaNode) -> AdminClient:
    config: dict[str, str | int | float | bool] = {**admin_config(node)}
    return AdminClient(config)


def _make_topics(names: list[str], partitions: int) -> None:
    admin = _admin(kafka.SOURCE)
    for done in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        done.result(30)


def _delete_topics(names: list[str]) -> None:
    for node in kafka.NODES:
        _admin(node).delete_topics(names)


def _let_postgres_through() -> None:
    """Root runs the devstack's PostgreSQL as the `postgres` user (devstack/postgres.py), which
    must pass through the folder holding this stack's var/ (the repository's var/) too."""
    parent = settings.VAR_DIR.parent
    if os.geteuid() == 0 and parent.name == "var" and parent.parent == ROOT:
        shutil.chown(parent, group="postgres")
        parent.chmod(0o710)


@dataclass
class Drills:
    deployment: Deployment
    topic: str
    approvals: list[str]  # a mirror to promote in each drill
    writer: StampedWriter
    tail: MirrorTail
    measured: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def drills() -> Iterator[Drills]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISTHMUS_TEST")}
    env.update(ISTHMUS_DEVSTACK_HOSTS="2", ISTHMUS_DB="postgres")
    for name in ("REDIS_URL", "DATABASE_URL", "ISTHMUS_REDIS_SENTINELS"):
        env.pop(name, None)
    deployment = Deployment(env)
    topic = leftovers.unique_name("hostdrill")
    approvals = [leftovers.unique_name(f"approval{n}") for n in range(3)]
    _make_topics([topic], PARTITIONS)
    _make_topics(approvals, 1)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for name in approvals:
        producer.produce(name, b"before the drill")
    producer.flush(30)
    _let_postgres_through()
    writer, tail = StampedWriter(topic, PARTITIONS, PER_SECOND), MirrorTail(topic, PARTITIONS)
    try:
        deployment.manage("devstack", "up", "postgres")
        deployment.manage("migrate", "--noinput", "-v", "0")
        # Host A first, so the engine starts there; then host B.
        deployment.manage("devstack", "up", "host-a", hosts.WITNESS)
        script = SETUP.replace("TOPICS", repr([topic, *approvals])).replace(
            "PASSWORD", repr(PASSWORD)
        )
        made = json.loads(deployment.manage("shell", "-c", script).strip().splitlines()[-1])
        deployment.tokens, deployment.destination = made["tokens"], made["destination"]
        eventually(lambda: deployment.engine().get("host") == "host-a", 300, "the engine on A")
        deployment.manage("devstack", "up")
        writer.start()
        tail.start()
        eventually(lambda: tail.timeline.records() > 5 * PER_SECOND, 300, "the mirror copying")
        yield Drills(deployment, topic, approvals, writer, tail)
    finally:
        if writer.ident and not writer.finishing.is_set():
            writer.finishing.set()
            writer.join()
        tail.finishing.set()
        for host in hosts.HOSTS:
            subprocess.run(
                [sys.executable, "manage.py", "devstack", "kill-host", host.name],
                env=env,
                cwd=ROOT,
                capture_output=True,
            )
        deployment.manage("devstack", "down", hosts.WITNESS, "postgres", "host-a", "host-b")
        # The engines' logs are kept, to read how long each start took.
        for log in (settings.VAR_DIR / "hosts").glob("*/streams/engine-*/engine.log"):
            shutil.copy(log, settings.VAR_DIR / "log" / f"drill-engine-{log.parts[-4]}.log")
        # The next run starts afresh: its own database, Redis data and engine folders.
        shutil.rmtree(settings.VAR_DIR / "postgres", ignore_errors=True)
        shutil.rmtree(settings.VAR_DIR / "hosts", ignore_errors=True)
        _delete_topics([topic, *approvals])


def _copying_after(timeline: Timeline, moment: float) -> bool:
    """Records written after `moment` are visible in the mirror."""
    return any(b.newest > moment for b in list(timeline.batches))


def _caught_up(timeline: Timeline) -> bool:
    """The latest records became visible within a second of their writing."""
    last = timeline.batches[-1] if timeline.batches else None
    return last is not None and last.visible - last.newest < 1 and time.time() - last.visible < 1


def _killed_then_recovered(drills: Drills, kill, what: str, ask_on: str, approve_on: str) -> float:
    """One drill: an approval asked on `ask_on`, the kill, copying again, the survivor's
    console, the approval executed on `approve_on`; the measurements printed. Seconds from the
    kill until copying again."""
    deployment = drills.deployment
    request = deployment.ask_promote(ask_on, drills.approvals.pop(0))
    before = deployment.engine().get("host")
    kill()
    killed = time.time()
    eventually(lambda: _copying_after(drills.tail.timeline, killed), 300, f"copying, {what}")
    took_over = deployment.engine()
    page = deployment.page(approve_on)
    assert "<h1>Data plane</h1>" in page
    executed = deployment.approve(approve_on, request)
    eventually(lambda: _caught_up(drills.tail.timeline), 180, f"the mirror caught up, {what}")
    # Copiers may deliver what they held for a moment after the kill: copying resumed at the
    # end of the longest time after it in which no record became visible.
    gap, began = drills.tail.timeline.longest_gap(killed)
    resumed = began + gap - killed
    line = (
        f"{what}: engine on {before} before, on {took_over.get('host')} after; copying again "
        f"{resumed:.1f} s after the kill (longest gap {gap:.1f} s from {began - killed:+.1f} s), "
        f"worst lag {drills.tail.timeline.worst_lag(killed):.1f} s; {approve_on}'s console "
        f"answered; the promote asked on {ask_on} executed {executed:.1f} s after its approval "
        f"on {approve_on}"
    )
    drills.measured.append(line)
    print("\n" + line)
    return resumed


def _back_alone(drills: Drills, host: str) -> None:
    """`host` started again: it starts no engine of its own while the other host's runs, and
    its beat stands by."""
    deployment = drills.deployment
    began = time.monotonic()
    deployment.manage("devstack", "up")
    engine, beat = deployment.engine().get("host"), deployment.active_beat()
    # Five of the beat's supervision rounds (every 2 s), watched: no engine starts on `host`.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert engine == host or not _engine_processes(host), f"a second engine on {host}"
        assert deployment.engine().get("host") == engine
        assert deployment.active_beat() == beat
        time.sleep(0.5)
    line = f"{host} back in {time.monotonic() - began:.0f} s: the engine stays on {engine}, "
    line += f"the active beat on {beat}"
    drills.measured.append(line)
    print("\n" + line)


def test_a_host_a_killed_whole(drills):
    deployment = drills.deployment
    assert deployment.engine().get("host") == "host-a"

    def kill() -> None:
        deployment.manage("devstack", "kill-host", "host-a")

    resumed = _killed_then_recovered(drills, kill, "host A killed whole", "host-a", "host-b")
    assert deployment.engine().get("host") == "host-b"
    assert not _engine_processes("host-a")
    _back_alone(drills, "host-a")
    assert resumed <= RESUMED_WITHIN_S, drills.measured


def test_b_then_only_the_redis_master(drills):
    deployment = drills.deployment
    port = deployment.redis().connection_pool.get_master_address()[1]
    (owner,) = [h for h in hosts.HOSTS if h.redis_port == port]
    other = _other_than(owner.name)

    def kill() -> None:
        master = processes.read_pidfile(settings.VAR_DIR / "run" / f"{owner.part('redis')}.pid")
        assert master is not None
        os.kill(master.pid, signal.SIGKILL)

    what = f"the Redis master ({owner.name}'s) killed"
    resumed = _killed_then_recovered(drills, kill, what, owner.name, other)
    assert deployment.redis().connection_pool.get_master_address()[1] != port
    _back_alone(drills, owner.name)
    assert resumed <= RESUMED_WITHIN_S, drills.measured


def test_c_then_only_the_engines_host(drills):
    deployment = drills.deployment
    engine_host = deployment.engine().get("host")
    survivor = _other_than(engine_host)

    def kill() -> None:
        deployment.manage("devstack", "kill-host", engine_host)

    what = f"the engine's host ({engine_host}) killed whole"
    resumed = _killed_then_recovered(drills, kill, what, engine_host, survivor)
    assert deployment.engine().get("host") == survivor
    _back_alone(drills, engine_host)
    assert resumed <= RESUMED_WITHIN_S, drills.measured


def test_d_every_record_copied_once(drills):
    written = drills.writer.finish()
    timeline = drills.tail.finish(written, timeout=300)
    assert len(assert_exact_copy(drills.topic, drills.topic)) == written
    print(
        f"\n{written:,} records at {PER_SECOND:,}/s over {PARTITIONS} partitions, all copied once"
    )
    for line in drills.measured:
        print(line)
    print(f"over the whole run: {timeline.describe(timeline.batches[0].visible)}")
