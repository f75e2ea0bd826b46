"""Shared fixtures.

The devstack clusters and Redis start once per session (reused if already up, and stopped at the
end only if this session started them); so does the devstack's PostgreSQL with ISTHMUS_DB=postgres,
before the test database is made on it. A real Celery worker runs against the test database on
its own Redis database, so a running `make demo` worker never sees test tasks.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings

from devstack import kafka
from devstack.stack import Stack
from infra.processes import wait_for

ROOT = Path(__file__).resolve().parent.parent
# Another Redis database (ISTHMUS_TEST_REDIS_DB) lets a second test run go on beside this one.
TEST_REDIS_URL = f"redis://127.0.0.1:6380/{os.environ.get('ISTHMUS_TEST_REDIS_DB', '15')}"
SHARED_PARTS = ["source", "destination", "redis"]


@pytest.fixture(scope="session", autouse=True)
def _test_redis_database():
    """Tests, their Celery worker and the streams they start share a Redis database of their
    own, apart from a running demo's."""
    from django.test import override_settings

    from console.celery import app

    # Tasks sent by the tests themselves (a promote scheduling its finish, say) go to the
    # test worker too, from the first one on: the app keeps the broker connection it made.
    app.conf.update(broker_url=TEST_REDIS_URL, result_backend=TEST_REDIS_URL)
    with override_settings(REDIS_URL=TEST_REDIS_URL):
        yield


@pytest.fixture(scope="session")
def stack() -> Stack:
    return Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, stack):
    """pytest-django's hook before it makes the test database: with ISTHMUS_DB=postgres, the
    devstack's PostgreSQL is up first (and stopped at the end if this session started it)."""
    if settings.DEVSTACK_POSTGRES is None:
        yield
        return
    started_here = not any(s.pid for s in stack.status(["postgres"]))
    try:
        stack.up(["postgres"], echo=lambda _: None)
        yield
    finally:
        if started_here:
            stack.down(["postgres"], echo=lambda _: None)


@pytest.fixture(scope="session")
def devstack(stack):
    """The two clusters and Redis, up for the whole session."""
    already = {s.name for s in stack.status(SHARED_PARTS) if s.pid}
    started_here = [name for name in SHARED_PARTS if name not in already]
    try:
        stack.up(SHARED_PARTS, echo=lambda _: None)
        yield stack
    finally:
        if started_here:
            stack.down(started_here, echo=lambda _: None)


@pytest.fixture(scope="session")
def var_dir() -> Path:
    return settings.VAR_DIR


@pytest.fixture(scope="session")
def source_bootstrap(devstack) -> str:
    return kafka.SOURCE.bootstrap


@pytest.fixture(scope="session")
def destination_bootstrap(devstack) -> str:
    return kafka.DESTINATION.bootstrap


def admin_config(node: kafka.KafkaNode) -> dict[str, str]:
    """The privileged `admin` principal's client config for `node`."""
    return kafka.sasl_client_config(node, settings.VAR_DIR, user="admin")


@pytest.fixture
def topic_name(request) -> str:
    """A topic name no other test uses."""
    base = re.sub(r"[^a-zA-Z0-9-]", "-", request.node.name)[:60]
    return f"{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def make_topic(devstack):
    """Create topics through the admin principal; deleted after the test."""
    made: list[tuple[kafka.KafkaNode, str]] = []

    def make(node: kafka.KafkaNode, name: str, partitions: int = 1, **config: str) -> str:
        admin = AdminClient(admin_config(node))
        futures = admin.create_topics([NewTopic(name, partitions, 1, config=config)])
        futures[name].result(timeout=30)
        made.append((node, name))
        # Created on the controller is not yet known to the broker that answers: wait for that,
        # so a test's next call (a mirror of it, say) does not race the metadata.
        deadline = time.monotonic() + 15
        while (known := admin.list_topics(topic=name, timeout=10).topics.get(name)) is None or (
            known.error is not None
        ):
            assert time.monotonic() < deadline, f"topic {name} did not show in the metadata"
            time.sleep(0.1)
        return name

    yield make
    for node, name in made:
        AdminClient(admin_config(node)).delete_topics([name])


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


# Registered clusters (the devstack's, as `make demo` registers them). -------------------------


@pytest.fixture
def registered_clusters(db, devstack):
    from replication import audit
    from replication.clusters import register_cluster

    clusters = {}
    for node in kafka.NODES:
        config = admin_config(node)
        bootstrap = config.pop("bootstrap.servers")
        clusters[node.name] = register_cluster(
            audit.Actor.system("tests"), node.name, bootstrap, config
        )
    return clusters


@pytest.fixture
def make_link(registered_clusters):
    """Create links from the source (over PLAINTEXT, as in the tutorial) into the destination.

    Afterwards every mirror topic the test made is deleted from the destination, ACLs and all.
    """
    from infra.kafka_admin import KafkaAdmin, KafkaAdminError
    from replication import audit, read_only
    from replication.links import create_link
    from replication.models import MirrorTopic

    def make(configs: dict[str, str] | None = None, name: str | None = None):
        return create_link(
            audit.Actor.system("tests"),
            registered_clusters["destination"],
            name or f"link-{uuid.uuid4().hex[:8]}",
            {"bootstrap.servers": kafka.SOURCE.bootstrap, **(configs or {})},
        )

    yield make
    admin = KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10)
    for topic in MirrorTopic.objects.values_list("mirror_topic", flat=True):
        with contextlib.suppress(KafkaAdminError):
            admin.delete_topic(topic)
        read_only.lift(admin, topic)


# A real Celery worker. ----------------------------------------------------------------------


def _database_url_for_worker() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return (
        f"postgres://{quote(db['USER'], safe='')}:{quote(db['PASSWORD'], safe='')}@"
        f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"
    )


def start_celery_worker(folder: Path, node: str) -> subprocess.Popen:
    """A real `celery worker` process, with beat, on the test database and its own Redis
    database; waits until it answers a ping."""
    from console.celery import app

    log = folder / "worker.log"
    env = {
        **os.environ,
        "REDIS_URL": TEST_REDIS_URL,
        "DATABASE_URL": _database_url_for_worker(),
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
                "--beat",
                "--schedule",
                str(folder / "beat-schedule"),
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


def stop_celery_worker(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def celery_worker(devstack, django_db_setup, django_db_blocker, tmp_path_factory):
    """The session's Celery worker with beat. Only committed rows (tests using
    `transactional_db`) are visible to it."""
    from console.celery import app

    proc = start_celery_worker(
        tmp_path_factory.mktemp("celery"), f"test-worker-{os.getpid()}@localhost"
    )
    try:
        yield app
    finally:
        stop_celery_worker(proc)
