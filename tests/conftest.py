"""Shared fixtures.

The devstack clusters and Redis start once per session (reused if already up, and stopped at the
end only if this session started them); so does the devstack's PostgreSQL with ISTHMUS_DB=postgres,
before the test database is made on it. A real Celery worker runs against the test database on
its own Redis database, so a running `make demo` worker never sees test tasks.

Whatever a test makes on the clusters is removed after it; what is left anyway (a failed test,
a forced link delete that turned mirrors into ordinary topics) is swept at the end of the
session, and the session fails if anything of its own remains (`tests/leftovers.py`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest
from confluent_kafka.admin import NewTopic
from django.conf import settings

from devstack import kafka, registry
from devstack.stack import WORKER_OPTIONS, Stack
from infra.admin_client import AdminClient
from infra.processes import wait_for
from tests import leftovers
from tests.leftovers import admin_config  # here too, as before, for the tests that import it
from tests.shared_stack import parts_of, shared_stack

ROOT = Path(__file__).resolve().parent.parent
# Under pytest-xdist (`make test` runs the suite in worker processes, tests/suite.py) each worker
# is a session of its own: its own test database (pytest-django adds `_gw<n>` to the name), Redis
# database and Celery worker. So is a second run beside this one (ISTHMUS_TEST_REDIS_DB,
# ISTHMUS_TEST_DATABASE).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_REDIS_DB = int(os.environ.get("ISTHMUS_TEST_REDIS_DB", "15")) - int((XDIST_WORKER or "gw0")[2:])
TEST_REDIS_URL = f"redis://127.0.0.1:{kafka.port(6380)}/{_REDIS_DB}"


def _test_database_name() -> str:
    """The name the tests' console runs under, which its streams write as their owner."""
    db = settings.DATABASES["default"]
    name = str(db.get("TEST", {}).get("NAME") or f"test_{db['NAME']}")
    return f"{name}_{XDIST_WORKER}" if XDIST_WORKER else name


# What this session makes that carries no marker (its links), and where to look for it: the
# tests' Redis database and the user's (settings.REDIS_URL before the tests override it).
LEDGER = leftovers.Ledger(_test_database_name(), [TEST_REDIS_URL, settings.REDIS_URL])


def pytest_configure(config: pytest.Config) -> None:
    """With pytest-xdist's workers, the clusters and Redis are started once, here in the
    controlling process, for all of them (and stopped at the end if they were not up before);
    for the fast tier alone only what it uses (starting and stopping the brokers for it took
    19 s of its 81)."""
    if getattr(config, "workerinput", None) is None and config.getoption("numprocesses", None):
        held = contextlib.ExitStack()
        stack = _stack()
        # PostgreSQL too, here once: each worker making it anew would race the others.
        fast = config.getoption("markexpr", "") == "not kafka"
        held.enter_context(shared_stack(stack, parts_of(stack, fast_tier=fast)))
        config.add_cleanup(held.close)


def _stack() -> Stack:
    return Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)


# Each tier's longest modules (measured in `make test`: the Kafka tier's take a minute or more of
# a worker each), run first: each worker takes the next module when it is done with one (in
# this order: tests/suite.py turns off xdist's own, by number of tests), so a long module taken
# last would leave the other worker idle for its length at the end.
LONGEST_FIRST = [
    f"tests/{name}.py"
    for name in (
        "integration/test_merge_flows",
        "integration/test_engine_links",
        "integration/test_restore",
        "integration/test_stream_supervision",
        "integration/test_engine_errors",
        "integration/test_offset_sync",
        "integration/test_scenarios",
        "integration/test_spark_standalone",
        "integration/test_gateways",
        "integration/test_client_switchover",
        "db/test_console_malformed",
        "db/test_role_matrix",
        "db/test_api_openapi",
    )
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test of tests/integration, tests/e2e, tests/faults and tests/ha `kafka` (they
    use the clusters, Spark or Chromium, or kill processes of their own), so `pytest -m "not
    kafka"` runs the unit and database-only tests (tests/unit, tests/db) for quick work; and
    those of tests/faults `faults` too (tests/ha's are marked `ha` themselves: `make test-ha`).
    The longest modules go first (LONGEST_FIRST), the rest in their order."""
    slow = [ROOT / "tests" / name for name in ("integration", "e2e", "faults", "ha")]
    for item in items:
        if any(Path(item.path).is_relative_to(folder) for folder in slow):
            item.add_marker(pytest.mark.kafka)
        if Path(item.path).is_relative_to(slow[2]):
            item.add_marker(pytest.mark.faults)

    def rank(item: pytest.Item) -> int:
        where = Path(item.path).relative_to(ROOT).as_posix()
        return LONGEST_FIRST.index(where) if where in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each module's tests stay together and in order


@pytest.fixture(scope="session", autouse=True)
def _note_links():
    """Note each link the session saves, however it is made (domain, API, console, CLI)."""
    from django.db.models.signals import post_save

    from replication.models import ClusterLink

    def note(sender, instance, created: bool, **kwargs) -> None:
        if created:
            LEDGER.links.add(str(instance.link_id))

    post_save.connect(note, sender=ClusterLink, weak=False, dispatch_uid="tests-ledger")
    yield
    post_save.disconnect(sender=ClusterLink, dispatch_uid="tests-ledger")


@pytest.fixture(scope="session", autouse=True)
def _test_redis_database():
    """Tests, their Celery worker and the streams they start share a Redis database of their
    own, apart from a running demo's."""
    from django.test import override_settings

    from console.celery import app

    # Tasks sent by the tests themselves (a promote scheduling its finish, say) go to the
    # test worker too, from the first one on: the app keeps the broker connection it made.
    app.conf.update(broker_url=TEST_REDIS_URL, result_backend=TEST_REDIS_URL)
    # The `users` fixture hashes four passwords per test: the default hasher takes ~0.6 s each
    # on this machine, a quick one keeps hundreds of tests from spending minutes on it.
    quick = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The engine starts with a link that has mirrors, as the tests were written for; a warm
    # start's own test sets it (test_stream_supervision).
    with override_settings(REDIS_URL=TEST_REDIS_URL, PASSWORD_HASHERS=quick, ENGINE_LAZY=True):
        yield


@pytest.fixture(scope="session")
def stack() -> Stack:
    return _stack()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, stack):
    """pytest-django's hook before it makes the test database: with ISTHMUS_DB=postgres, the
    devstack's PostgreSQL is up first (and stopped at the end if this session started it)."""
    if settings.DEVSTACK_POSTGRES is None:
        yield
        return
    with shared_stack(stack, ["postgres"]):
        yield


@pytest.fixture(scope="session")
def devstack(stack, request):
    """The two clusters, their schema registries and Redis (and, with ISTHMUS_DB=postgres, the
    PostgreSQL the registries keep their schemas in), up for the whole session. They may be a
    user's `make demo` stack: the session then leaves nothing of its own on them, and fails if
    it would."""
    with shared_stack(stack, parts_of(stack)):
        LEDGER.claim_test_redis()
        _report(request, "removed, left by sessions killed long ago", leftovers.sweep_stale(LEDGER))
        try:
            yield stack
        finally:
            # After every other session fixture (the Celery worker) and before the clusters
            # go down, failed tests or not.
            from replication.kafka import translations

            translations.close_readers()
            _report(request, "removed at the end of the session", leftovers.sweep(LEDGER))
            left = leftovers.remaining(LEDGER)
            assert not left, "The session left on the clusters or in Redis:\n" + "\n".join(left)


def _report(request, what: str, removed: list[str]) -> None:
    """Say what a sweep removed from the clusters: something a test made and did not remove
    itself (its links' stream folders and Redis keys are only ever removed by the sweep)."""
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    items = [item for item in removed if item.startswith(tuple(n.name for n in kafka.NODES))]
    if not items or reporter is None:
        return
    # Past output capture, so it shows when the session passes too.
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.write_line(f"\nLeftovers {what} ({len(items)}):", yellow=True)
        for item in items[:50]:
            reporter.write_line(f"  {item}")


@pytest.fixture(scope="session")
def var_dir() -> Path:
    return settings.VAR_DIR


@pytest.fixture(scope="session")
def source_bootstrap(devstack) -> str:
    return kafka.SOURCE.bootstrap


@pytest.fixture(scope="session")
def destination_bootstrap(devstack) -> str:
    return kafka.DESTINATION.bootstrap


@pytest.fixture
def topic_name(request) -> str:
    """A topic name no other test (or session) uses, with the session's marker, which the
    end-of-session sweep goes by."""
    return leftovers.unique_name(re.sub(r"[^a-zA-Z0-9-]", "-", request.node.name)[:60])


@pytest.fixture
def make_topic(devstack):
    """Create topics through the admin principal; deleted after the test, ACLs and all."""
    made: list[tuple[kafka.KafkaNode, str]] = []

    def make(node: kafka.KafkaNode, name: str, partitions: int = 1, **config: str) -> str:
        admin = AdminClient(admin_config(node))
        # The cluster's own replication factor: 3 on three-broker clusters, as production has.
        futures = admin.create_topics([NewTopic(name, partitions, -1, config=config)])
        futures[name].result(timeout=30)
        made.append((node, name))

        # Created on the controller is not yet known to every broker: wait until each one
        # answers for it (a client asks the one it reached first), so a test's next call (a
        # mirror of it, say) does not race the metadata.
        def known(broker: kafka.Broker) -> Callable[[], bool]:
            alone = AdminClient(
                {**admin_config(node), "bootstrap.servers": f"127.0.0.1:{broker.sasl_port}"}
            )

            def check() -> bool:
                found = alone.list_topics(topic=name, timeout=10).topics.get(name)
                return found is not None and found.error is None

            return check

        for broker in node.brokers:
            assert wait_for(known(broker), 30, 0.1), f"{broker.name} does not know topic {name}"
        return name

    yield make
    for node in kafka.NODES:
        leftovers.delete_topics(node, [name for on, name in made if on is node])


# Users, one per role. -----------------------------------------------------------------------


@pytest.fixture
def users(db, django_user_model):
    from django.contrib.auth.models import Group

    from console.access import ROLES

    made = {}
    for role in ROLES:
        user = django_user_model.objects.create_user(role, password=f"{role}-password-1")
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        made[role] = user
    return made


@pytest.fixture
def client_as(client, users):
    """A test client logged in with the given role."""

    def login(role: str):
        client.force_login(users[role])
        return client

    return login


@pytest.fixture
def api(users):
    """A client of the JSON API with an API token of the user of `role`."""
    from django.test import Client

    from replication.governance import audit
    from replication.governance.tokens import create_token

    def as_role(role: str):
        name = f"{role} token {uuid.uuid4().hex[:6]}"
        _, secret = create_token(audit.Actor.system("tests"), users[role], name)
        return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    return as_role


@pytest.fixture
def tokens(users):
    from replication.governance import audit
    from replication.governance.tokens import create_token

    return {
        role: create_token(audit.Actor.system("tests"), user, "cli")[1]
        for role, user in users.items()
    }


# Registered clusters (the devstack's, as `make demo` registers them). -------------------------


@pytest.fixture
def registered_clusters(db, devstack):
    from replication.governance import audit
    from replication.kafka.clusters import register_cluster
    from replication.models import KafkaCluster
    from replication.schemas.schema_registries import RegistryAccess

    clusters = {}
    for node in kafka.NODES:
        # A module's committed link (mirror_checks.committed_link) may hold a registration of
        # this cluster: set aside (its id blanked) in this test's transaction, which undoes it,
        # as a cluster is registered once.
        on_disk = kafka.cluster_id_on_disk(node, settings.VAR_DIR)
        KafkaCluster.objects.filter(cluster_id=on_disk).update(cluster_id="")
        config = admin_config(node)
        bootstrap = config.pop("bootstrap.servers")
        clusters[node.name] = register_cluster(
            audit.Actor.system("tests"),
            node.name,
            bootstrap,
            config,
            kafka.link_credentials(node, settings.VAR_DIR),  # as `make demo` registers them
            RegistryAccess(registry.of(node.name).url),
        )
    return clusters


@pytest.fixture
def make_link(registered_clusters, topic_name):
    """Create links from the source (over PLAINTEXT, as in the tutorial) into the destination.

    Afterwards their streams are stopped, and those of links the test made otherwise (through
    the pages or the API), and every mirror topic the test made is deleted from the
    destination, ACLs and all: those the database knows, and any topic named after the test's
    `topic_name` (a mirror a forced link delete turned into an ordinary topic, say).
    """
    from replication.engine import supervise
    from replication.governance import audit
    from replication.models import ClusterLink, MirrorTopic
    from replication.topics.link_creation import create_link

    before = {*ClusterLink.objects.values_list("pk", flat=True)}
    made = []

    def make(configs: dict[str, str] | None = None, name: str | None = None):
        link = create_link(
            audit.Actor.system("tests"),
            registered_clusters["destination"],
            name or f"link-{uuid.uuid4().hex[:8]}",
            {"bootstrap.servers": kafka.SOURCE.bootstrap, **(configs or {})},
        )
        made.append(link)
        return link

    yield make
    known = before | {link.pk for link in made if link.pk is not None}  # None: deleted
    made += ClusterLink.objects.exclude(pk__in=known)
    for link in made:
        supervise.stop(link)  # first, so no stream writes a mirror while it is deleted
    # The mirrors of the links it made (not those of a module's committed link beside it).
    mirrors = MirrorTopic.objects.filter(link__in=[link.pk for link in made])
    named = {*mirrors.values_list("mirror_topic", flat=True)}
    named |= {*leftovers.topics(kafka.DESTINATION, lambda name: topic_name in name)}
    leftovers.delete_topics(kafka.DESTINATION, named)


@pytest.fixture
def mirror_of(make_link, make_topic, topic_name):
    """A fresh paused link with a mirror of an empty source topic."""
    from replication.governance import audit
    from replication.topics.mirrors import create_mirror

    def make(suffix: str):
        topic = make_topic(kafka.SOURCE, f"{topic_name}-{suffix}")
        link = make_link({"cluster.link.paused": "true"})
        return create_mirror(audit.Actor.system("tests"), link, topic)

    return make


@pytest.fixture
def own_engine(monkeypatch):
    """An engine of the test's own, apart from the session's: for a test that runs the engine
    with settings of its own, or a stand-in process as the engine. The session's Celery worker
    never sees its links (uncommitted): they run on this engine alone. Stopped and removed
    afterwards."""
    from replication.core import engine_names, redis_channel
    from replication.engine import process, supervise
    from spark_jobs import control

    owner = f"{engine_names.owner_of_links()}-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(engine_names, "owner_of_links", lambda: owner)
    yield process.engine_id()
    supervise.stop_engine()
    r = redis_channel.client()
    r.delete(*r.keys(control.engine_pattern(process.engine_id())), process.seen_key())
    shutil.rmtree(process.engine_folder(), ignore_errors=True)


@pytest.fixture
def bidirectional(registered_clusters, make_link, topic_name):
    """A bidirectional link between the two registered clusters: its half into the destination
    (the `make_link` fixture cleans both halves up)."""
    from replication.governance import audit
    from replication.topics.link_creation import create_link

    def make(**configs: str):
        return create_link(
            audit.Actor.system("tests"),
            registered_clusters["destination"],
            f"both-{topic_name[-8:]}",
            {"link.mode": "BIDIRECTIONAL", **configs},
            source=registered_clusters["source"],
        )

    return make


@pytest.fixture
def copied_mirror(bidirectional, make_topic, topic_name):
    """`records` written to a new 2-partition topic on the source, mirrored over a new
    bidirectional link and copied: (the link's half into the destination, the mirror)."""
    from replication.governance import audit
    from replication.topics.mirrors import create_mirror
    from tests.kafka_clients import ordinary, write_numbered, write_transactions
    from tests.mirror_checks import run_until_copied

    def make(
        records: int = 0, topic_configs: dict | None = None, transactional: bool = False
    ) -> tuple:
        make_topic(kafka.SOURCE, topic_name, partitions=2, **(topic_configs or {}))
        if transactional:  # (write_transactions: 40 records per partition, up to offset 65)
            write_transactions(kafka.SOURCE.bootstrap, topic_name)
        write_numbered(ordinary(kafka.SOURCE), topic_name, 0, records)
        link = bidirectional()
        mirror = create_mirror(audit.Actor.system("tests"), link, topic_name)
        run_until_copied(link, [mirror])
        return link, mirror

    return make


# A real Celery worker. ----------------------------------------------------------------------


def _database_url_for_worker() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return (
        f"postgres://{quote(db['USER'], safe='')}:{quote(db['PASSWORD'], safe='')}@"
        f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"
    )


def start_celery_worker(folder: Path, node: str, queue: str = "celery") -> subprocess.Popen:
    """A real `celery worker` process on the test database and its own Redis database, taking
    `queue`'s tasks (with beat for the default queue); waits until it answers a ping."""
    from console.celery import app

    log = folder / "worker.log"
    env = {
        **os.environ,
        "REDIS_URL": TEST_REDIS_URL,
        "DATABASE_URL": _database_url_for_worker(),
        "ISTHMUS_ENGINE_LAZY": "1",  # as the tests' own process (see _test_redis_database)
    }
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "console",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "INFO",
                "--hostname",
                node,
                "--queues",
                queue,
                *WORKER_OPTIONS,
                *(
                    ["--beat", "--schedule", str(folder / "beat-schedule")]
                    if queue == "celery"
                    else []
                ),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    if not wait_for(lambda: app.control.ping(destination=[node], timeout=1), 60):
        proc.kill()
        raise RuntimeError(f"Celery worker did not start; see {log}:\n{log.read_text()}")
    return proc


def stop_process(proc: subprocess.Popen, warm_s: float = 30) -> None:
    """Ask a process the tests started to stop, with every process it started; kill what has
    not stopped within `warm_s`. Its children too: a worker killed alone leaves its embedded beat
    running, sending tasks to the tests' Redis after the session ended."""
    family: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        family = psutil.Process(proc.pid).children(recursive=True)
    proc.terminate()
    try:
        proc.wait(timeout=warm_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _, alive = psutil.wait_procs(family, timeout=min(warm_s, 10))
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=5)


# A session's worker at its end: the engine its supervisor started (a child of the worker's)
# does not stop with it, and waiting 10 s for it cost each tier's end 10-30 s.
WORKER_WARM_STOP_S = 3


class _SupervisedWorker:
    """A session's worker, started again when it dies, as its supervisor would start it (prefork's
    parent in `make demo`, the compose file's restart): librdkafka aborts the whole process on
    some bugs of its own (once, an admin request's answer parsed as its broker stopped), and in
    the solo pool the tests use, that process is the worker. What the dead one left (its
    embedded beat) is stopped first."""

    def __init__(self, folder: Path, node: str, queue: str = "celery"):
        self.folder, self.node, self.queue = folder, node, queue
        self.proc = start_celery_worker(folder, node, queue)
        self.stopping = threading.Event()
        self.watch = threading.Thread(target=self._keep, daemon=True)
        self.watch.start()

    def _keep(self) -> None:
        while not self.stopping.wait(1):
            if self.proc.poll() is None:
                continue
            for left in psutil.process_iter(["cmdline"]):
                if self.node in " ".join(left.info["cmdline"] or []):
                    with contextlib.suppress(psutil.Error):
                        left.kill()
            print(
                f"Worker {self.node} died (exit code {self.proc.returncode}; its log: "
                f"{self.folder / 'worker.log'}); started again.",
                file=sys.stderr,
            )
            self.proc = start_celery_worker(self.folder, self.node, self.queue)

    def __enter__(self) -> _SupervisedWorker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopping.set()
        self.watch.join()
        stop_process(self.proc, WORKER_WARM_STOP_S)


@pytest.fixture(scope="session")
def celery_worker(devstack, django_db_setup, django_db_blocker, tmp_path_factory):
    """The session's Celery worker with beat. Only committed rows (tests using
    `transactional_db`) are visible to it."""
    from console.celery import app

    with _SupervisedWorker(
        tmp_path_factory.mktemp("celery"), f"test-worker-{os.getpid()}@localhost"
    ):
        yield app


@pytest.fixture(scope="session")
def scenario_worker(celery_worker, tmp_path_factory):
    """The session's worker for scenario runs (their own queue, as `make demo` has it)."""
    with _SupervisedWorker(
        tmp_path_factory.mktemp("scenarios"),
        f"test-scenarios-{os.getpid()}@localhost",
        settings.SCENARIO_QUEUE,
    ):
        yield


@pytest.fixture(scope="session")
def verification_worker(celery_worker, tmp_path_factory):
    """The session's worker comparing mirrors with their sources (its own queue, as `make demo`
    has it): the beat's rounds every 30 s, and the verifications asked for."""
    with _SupervisedWorker(
        tmp_path_factory.mktemp("verifier"),
        f"test-verifier-{os.getpid()}@localhost",
        settings.VERIFY_QUEUE,
    ):
        yield


@pytest.fixture
def world(users, registered_clusters, make_link, make_topic, topic_name):
    """A link (paused), its mirror and a merge flow, a pending request, a user `victim`, a token,
    a source topic no mirror follows, a scenario run: what the console's routes are walked
    with."""
    from replication.actions import approvals
    from replication.governance import audit
    from replication.governance import users as user_admin
    from replication.governance.tokens import create_token
    from replication.models import ClusterLink, Verification
    from replication.scenarios import registry, runner
    from replication.topics import merge_flows, mirrors
    from tests.url_routes import World

    setup = audit.Actor.system("tests")
    link = make_link({"cluster.link.paused": "true"})  # paused: no stream to start
    # Two approvals: an operator's promote waits as a request, and approving it once runs nothing.
    ClusterLink.objects.filter(pk=link.pk).update(approvals_required=2)
    link.refresh_from_db()
    mirror = mirrors.create_mirror(setup, link, make_topic(kafka.SOURCE, f"{topic_name}-m"))
    operator = audit.Actor(user=users["operator"], name="operator")
    request = approvals.submit(operator, link, "promote", [mirror.mirror_topic], "walk").request
    user_admin.create_user(setup, "victim", "operator")
    return World(
        link=link,
        mirror=mirror,
        request=request,
        token=create_token(setup, users["admin"], "walk")[0],
        new_topic=make_topic(kafka.SOURCE, f"{topic_name}-new"),
        destination=registered_clusters["destination"],
        run=runner.start(registry.get("share-data"), setup),
        verification=Verification.objects.create(mirror=mirror, requested_by="tests"),
        flow=merge_flows.create_flow(
            setup, link, make_topic(kafka.SOURCE, f"{topic_name}-f"), f"{topic_name}-f.merged"
        ),
        gateway=_a_stopped_gateway(registered_clusters),
    )


def _a_stopped_gateway(clusters):
    """A gateway as its row alone (its proxy is not started: tests/integration/test_gateways.py
    starts and switches real ones)."""
    from replication.models import Gateway

    # Routing to the destination: the malformed walk registers the source anew at its end.
    gateway = Gateway.objects.create(
        name="walk-gateway", host="127.0.0.1", port=29700, route=clusters["destination"]
    )
    gateway.clusters.set([clusters["source"], clusters["destination"]])
    return gateway
