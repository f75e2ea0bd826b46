"""The region holding Isthmus is lost (issue 45, item 4), on one machine: region A holds the
source cluster, Isthmus A (its worker and beat, its Redis, its engine) and the primary
PostgreSQL; region B the destination cluster, Isthmus B's own Redis and, before the promotion,
only the standby PostgreSQL (the devstack's postgres-standby part). While a producer writes and
A's engine copies, region A is killed whole (kill -9); `manage.py promote_standby` (refused
while the primary answered) makes B's database the primary; B's worker, beat and console start,
and B's engine runs; the mirror is failed over from B's console over HTTP, asked by an operator
and approved by an approver; region A's cluster comes back (not its Isthmus nor its database);
the mirror fails back from B's console (truncate-and-restore, approved the same way). Every
record the destination held at the kill is there after the failover and after the fail back,
the source ends an exact copy of the promoted topic, and B's audit trail holds region A's
actions (replicated before the kill) and B's."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
import requests
from confluent_kafka.admin import NewTopic

from devstack import kafka, sentinel
from devstack.stack import Stack
from infra import processes
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.engine import process
from spark_jobs import control
from tests import leftovers
from tests.conftest import admin_config
from tests.kafka_clients import SteadyWriter, ordinary, write_numbered
from tests.mirror_checks import eventually, read_all

pytestmark = [pytest.mark.ha, pytest.mark.usefixtures("devstack")]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS, PER_SECOND, NEW_IN_B = 2, 500, 100
DATABASE = "isthmus"
ENGINE = process.engine_id(DATABASE)  # each region's: its database's name is the same
REGION_PORTS = {"a": kafka.port(6390), "b": kafka.port(6391)}  # each region's Redis
WEB_B = kafka.port(8010)
PRIMARY = kafka.port(5443)  # the devstack's postgres part, apart from a stack's own (5433)
AUDITED = "SELECT action FROM replication_auditevent ORDER BY id"


class Region:
    """One region's Isthmus: its Redis, and its worker, beat and (B's) console, each a process
    of its own session, started on its database."""

    def __init__(self, name: str, folder: Path, database_port: int, password: str):
        self.name, self.folder, self.database_port = name, folder / name, database_port
        self.redis_port = REGION_PORTS[name]
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ISTHMUS_TEST")},
            "ISTHMUS_DB": "postgres",
            "DATABASE_URL": f"postgres://isthmus:{password}@127.0.0.1:{database_port}/{DATABASE}",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "ISTHMUS_HOST_NAME": f"region-{name}",
            "ISTHMUS_STREAM_DIR": str(self.folder / "streams"),
        }
        self.env.pop("ISTHMUS_REDIS_SENTINELS", None)

    def pidfile(self, part: str) -> Path:
        return self.folder / "run" / f"{part}.pid"

    def start(self, part: str, argv: list[str]) -> None:
        processes.start(
            argv,
            pidfile=self.pidfile(part),
            logfile=self.folder / "log" / f"{part}.log",
            env=self.env,
            cwd=ROOT,
        )

    def start_redis(self) -> None:
        (self.folder / "redis").mkdir(parents=True, exist_ok=True)
        self.start("redis", sentinel.redis_server(self.redis_port, self.folder / "redis"))
        eventually(lambda: self.redis().ping(), 30, f"region {self.name}'s Redis")

    def redis(self) -> redis.Redis:
        return redis.Redis(port=self.redis_port, socket_timeout=2)

    def start_isthmus(self, web: bool = False) -> None:
        celery = [str(Path(sys.executable).parent / "celery"), "-A", "console"]
        self.start(
            "worker",
            [*celery, "worker", "-Q", "celery", "-c", "2", "-n", f"region-{self.name}@drill"],
        )
        self.start("beat", [*celery, "beat", "--schedule", str(self.folder / "beat-schedule")])
        if web:
            listen = f"127.0.0.1:{WEB_B}"
            self.start("web", [sys.executable, "-m", "console.web_server", "--listen", listen])

    def spawn(self, *args: str) -> subprocess.Popen:
        """`manage.py` with this region's settings, running beside the drill."""
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def manage(self, *args: str, check: bool = True) -> tuple[int, str, str]:
        command = self.spawn(*args)
        out, err = command.communicate(timeout=300)
        assert not check or command.returncode == 0, err[-3000:]
        return command.returncode, out, err

    def engine(self) -> control.EngineHeartbeat:
        return control.engine_heartbeat(self.redis(), ENGINE)

    def kill(self, parts: list[str]) -> None:
        """kill -9 of each part's whole session (the engine's: its driver and executors)."""
        engine = self.folder / "streams" / f"engine-{ENGINE}" / "engine.pid"
        for pidfile in [*(self.pidfile(p) for p in parts), engine]:
            running = processes.read_pidfile(pidfile)
            if running is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(running.pid, signal.SIGKILL)

    def stop(self) -> None:
        self.kill(["web", "beat", "worker", "redis"])


def _sql(port: int, password: str, query: str) -> list[tuple]:
    with psycopg.connect(
        host="127.0.0.1", port=port, user="isthmus", password=password, dbname=DATABASE
    ) as conn:
        return conn.execute(query).fetchall()


SETUP = """
import json
from replication.governance import audit
from replication.topics.link_creation import create_link
from replication.topics.mirrors import create_mirror
from tests.ha.drill_setup import users_and_clusters
actor = audit.Actor.system("region A setup")
tokens, clusters = users_and_clusters(actor, "region-password-1")
configs = {"link.mode": "BIDIRECTIONAL", "availability.check.ms": "1000",
           "availability.check.consecutive.failure.threshold": "2"}
link = create_link(actor, clusters["destination"], "regions", configs, source=clusters["source"])
create_mirror(actor, link, TOPIC)
print(json.dumps({"tokens": tokens, **{n: c.cluster_id for n, c in clusters.items()}}))
"""


class Console:
    """Region B's console over HTTP, as each user's API token reaches it."""

    def __init__(self, tokens: dict[str, str], clusters: dict[str, str]):
        self.tokens, self.clusters = tokens, clusters

    def url(self, cluster: str, path: str) -> str:
        return f"http://127.0.0.1:{WEB_B}/kafka/v3/clusters/{self.clusters[cluster]}/{path}"

    def call(self, role: str, method: str, url: str, body: dict | None = None) -> dict:
        auth = {"Authorization": f"Bearer {self.tokens[role]}"}
        answer = requests.request(method, url, json=body, headers=auth, timeout=60)
        assert answer.status_code < 300, (answer.status_code, answer.text[:2000])
        return answer.json()

    def approved(self, cluster: str, action: str, topic: str, reason: str) -> float:
        """`action` on the link's mirror of `topic` in `cluster`, asked by the operator and
        approved by the approver, until executed; how long that took."""
        began = time.monotonic()
        asked = self.call(
            "operator",
            "POST",
            self.url(cluster, f"links/regions/mirrors:{action}"),
            {"mirror_topic_names": [topic], "reason": reason},
        )
        request = self.url(cluster, f"approval-requests/{asked['approval_request']['id']}")
        self.call("approver", "POST", f"{request}:approve", {})

        def executed() -> str | None:
            state = self.call("operator", "GET", request)["state"]
            return state if state != "APPROVED" else None

        assert eventually(executed, 180, f"the approved {action}") == "EXECUTED"
        return time.monotonic() - began


@contextlib.contextmanager
def regions() -> Iterator[tuple[Stack, Region, Region, str]]:
    """The primary PostgreSQL (region A's) and its standby (region B's), with the two regions'
    Redis; everything of theirs is stopped and removed afterwards. Their folder is outside var/
    and reachable by Debian's `postgres` user, which the servers run as under root."""
    folder = Path(tempfile.mkdtemp(prefix="isthmus-regions-"))
    password = secrets.token_urlsafe(18)
    spec = {"host": "127.0.0.1", "port": PRIMARY, "user": "isthmus", "name": DATABASE}
    databases = Stack(folder, postgres={**spec, "password": password})
    a = Region("a", folder, PRIMARY, password)
    (standby,) = databases.select(["postgres-standby"])
    b = Region("b", folder, standby.ports[0], password)
    try:
        databases.up(["postgres"], echo=lambda _: None)
        migrating = a.spawn("migrate", "-v", "0")  # the standby receives it as it goes
        databases.up(["postgres-standby"], echo=lambda _: None)
        a.start_redis()
        b.start_redis()
        assert migrating.wait(timeout=300) == 0, migrating.communicate()[1][-3000:]
        # The console's role reads where the primary is, and not the replication password.
        [(conninfo,)] = _sql(b.database_port, password, "SHOW primary_conninfo")
        assert "passfile=" in conninfo and "password=" not in conninfo, conninfo
        yield databases, a, b, password
    finally:
        for region in (a, b):
            region.stop()
        databases.down(echo=lambda _: None)
        shutil.rmtree(folder, ignore_errors=True)


def test_region_a_lost_whole_region_b_promoted_fails_over_and_back_with_nothing_lost(stack):
    topic = leftovers.unique_name("region")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    del admin  # else its client calls the dead source for the rest of the drill
    writer = SteadyWriter(topic, PARTITIONS, PER_SECOND)
    took = Stages()
    with _source_back_afterwards(stack), regions() as (databases, a, b, password):
        took("the databases, primary and standby, and the regions' Redis")
        a.start_isthmus()  # its engine starts warm meanwhile
        _, out, _ = a.manage("shell", "-c", SETUP.replace("TOPIC", repr(topic)))
        made = json.loads(out.strip().splitlines()[-1])
        console = Console(made.pop("tokens"), made)
        writer.start()
        # Region B's operator, too early: refused while the primary answers.
        early = b.spawn("promote_standby", "--reason", "region A is down")
        eventually(lambda: _copied(topic) > 3 * PER_SECOND, 420, "region A's engine copying")
        took("region A's link and mirror made, its engine copying")
        _, refused = early.communicate(timeout=300)
        assert early.returncode != 0 and "still answers" in refused, refused
        # Region A's actions are on the standby before it dies (streaming, asynchronous).
        before_kill = _sql(PRIMARY, password, AUDITED)
        eventually(
            lambda: _sql(b.database_port, password, AUDITED) == before_kill,
            30,
            "region A's audit trail on the standby",
        )

        # Region A is lost whole: its cluster, its Isthmus, its Redis, its database.
        writer.finishing.set()  # its applications die with it (what they queued is lost)
        a.kill(["worker", "beat", "redis"])
        _kill_part(stack, "source")
        _kill_part(databases, "postgres")
        killed = time.monotonic()
        took("the early promotion refused, region A killed")
        held = read_all(kafka.DESTINATION.bootstrap, topic)  # what the mirror had copied

        _, promoted, _ = b.manage("promote_standby", "--reason", "drill: region A lost")
        promote_s = time.monotonic() - killed
        assert "is the primary now" in promoted, promoted
        pg_promote_s = float(promoted.split("promoted in ")[1].split(" s")[0])
        b.start_isthmus(web=True)
        engine = eventually(
            lambda: b.engine().get("state") == "running" and b.engine(), 420, "B's engine"
        )
        engine_s = time.monotonic() - killed
        assert engine["host"] == "region-b", engine
        eventually(lambda: _web_answers(), 120, "B's console")
        took("promoted, B's Isthmus started and its engine running")

        failover_s = console.approved("destination", "failover", topic, "region A is lost")
        assert read_all(kafka.DESTINATION.bootstrap, topic) == held  # nothing lost, nothing new
        took("failed over")
        # The applications moved to region B write the promoted topic.
        write_numbered(ordinary(kafka.DESTINATION), topic, 0, NEW_IN_B)

        # Region A's cluster is back (its Isthmus and old primary are not: rebuilt later as
        # B's standby); what its producer had queued may reach it now, as the old primary's own.
        stack.up(["source"], echo=lambda _: None)
        writer.join(timeout=330)
        # Region A's engine had copied exactly: the mirror held the source's records, in order.
        assert _kept(held, read_all(kafka.SOURCE.bootstrap, topic))
        took("region A's cluster back")
        failback_s = console.approved("source", "truncate-and-restore", topic, "region A back")

        def restored() -> bool:
            return read_all(kafka.SOURCE.bootstrap, topic) == read_all(
                kafka.DESTINATION.bootstrap, topic
            )

        eventually(restored, 180, "the source restored from the promoted topic")
        took("failed back, the source equal to the promoted topic")
        promoted_topic = read_all(kafka.DESTINATION.bootstrap, topic)
        assert _kept(held, promoted_topic) and len(promoted_topic) == len(held) + NEW_IN_B

        trail = _sql(b.database_port, password, AUDITED)
        assert trail[: len(before_kill)] == before_kill  # region A's, in order
        done_in_a = {action for (action,) in before_kill}
        assert {"cluster.register", "link.create", "mirror.create"} <= done_in_a, done_in_a
        done_in_b = [action for (action,) in trail[len(before_kill) :]]
        for action in ("database.promote_standby", "mirror.failover", "mirror.restored"):
            assert action in done_in_b, done_in_b
    leftovers.delete_topics(kafka.DESTINATION, [topic])
    leftovers.delete_topics(kafka.SOURCE, leftovers.topics(kafka.SOURCE, lambda n: topic in n))
    print(
        f"\nRegion A lost with {len(held)} records copied: promoted {promote_s:.1f} s after the "
        f"kill (pg_promote {pg_promote_s:.1f} s), B's engine running after {engine_s:.1f} s "
        f"({engine_s - promote_s:.1f} s after the promotion); failover asked and approved over "
        f"HTTP, executed in {failover_s:.1f} s; fail back in {failback_s:.1f} s; every record "
        "kept"
    )


class Stages:
    """How long each stage of the drill took, printed as it ends."""

    def __init__(self) -> None:
        self.began = self.last = time.monotonic()

    def __call__(self, what: str) -> None:
        now = time.monotonic()
        print(f"\n[{now - self.began:6.1f} s] {what} (+{now - self.last:.1f} s)", flush=True)
        self.last = now


def _kept(held: list, now: list) -> bool:
    """Every record `held` is in `now`, the same at the same partition and offset."""
    at = {(r.partition, r.offset): r for r in now}
    return all(at.get((r.partition, r.offset)) == r for r in held)


@contextlib.contextmanager
def _source_back_afterwards(stack: Stack) -> Iterator[None]:
    """The session's source cluster running after the drill, however it ended."""
    try:
        yield
    finally:
        stack.up(["source"], echo=lambda _: None)


def _copied(topic: str) -> int:
    try:
        return sum(
            KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, PARTITIONS).values()
        )
    except KafkaAdminError:  # the mirror's partitions not there yet
        return -1


def _kill_part(stack: Stack, name: str) -> None:
    running = processes.read_pidfile(stack.pidfile(name))
    assert running is not None, f"{name} is not running"
    os.killpg(running.pid, signal.SIGKILL)
    eventually(lambda: processes.read_pidfile(stack.pidfile(name)) is None, 30, f"{name} dead")


def _web_answers() -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{WEB_B}/login/", timeout=5).status_code == 200
    except requests.RequestException:  # not listening yet, or still starting
        return False
