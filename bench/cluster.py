"""The dev stack the bench runs on, and small admin helpers over its two clusters."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Producer

from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.kafka_topics import NewTopicSpec

from .rdproduce import send

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "var" / "bench"  # logs, configs and checkpoints of a run (git-ignored)
KAFKA_RUN = ROOT / "devstack" / "kafka-run"

SOURCE = "127.0.0.1:9092"
DESTINATION = "127.0.0.1:9093"
REDIS_URL = "redis://127.0.0.1:6380/0"
PREFIX = "bench."  # every topic the bench makes starts with this, so cleanup cannot hit others


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def ensure_stack() -> None:
    """Start the two clusters and Redis if they are not running (idempotent)."""
    subprocess.run(
        [sys.executable, "manage.py", "devstack", "up", "source", "destination", "redis"],
        cwd=ROOT,
        check=True,
    )


def stack_pids(names: tuple[str, ...] = ("source", "destination")) -> list[int]:
    """Processes of the dev stack's parts (the brokers by default), from its pid files."""
    run = ROOT / "var" / "run"
    return [json.loads((run / f"{name}.pid").read_text())["pid"] for name in names]


@functools.cache
def admin(bootstrap: str) -> KafkaAdmin:
    """One client per cluster for the bench's whole run: a new one per look at a copy took
    its own connection and metadata, and failed now and then on topics just made."""
    return KafkaAdmin({"bootstrap.servers": bootstrap}, timeout=30)


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Delete `names` where they exist and wait until they are gone, so they can be re-made."""
    client = admin(bootstrap)
    present = sorted(set(names) & client.list_topic_names())
    if present:
        kafka = AdminClient({"bootstrap.servers": bootstrap})  # held until its answers are in
        for future in kafka.delete_topics(present, request_timeout=30).values():
            with contextlib.suppress(KafkaException):  # already gone: what we want
                future.result(timeout=35)
    deadline = time.monotonic() + 60
    while present and set(present) & client.list_topic_names():
        if time.monotonic() > deadline:
            raise RuntimeError(f"Topics not deleted on {bootstrap} after 60 s: {present}")
        time.sleep(0.2)


_PARTITION_DIR = re.compile(r"-\d+(\.[0-9a-f]+-delete)?$")  # after the topic's name


def wait_files_deleted(name: str, topics: list[str], timeout: float = 180.0) -> None:
    """Until the dev stack broker `name` ("source", "destination") has removed the files of
    `topics`, deleted on it. A deleted partition keeps its open files until they are removed,
    `file.delete.delay.ms` (60 s) after the broker took up the deletion: making 10,000 new
    partitions beside 10,000 just deleted would take it past this machine's open-files limit
    (20,000), and it would stop."""
    data = ROOT / "var" / "kafka" / name / "data"
    gone = set(topics)

    def left() -> bool:  # "<topic>-<partition>", then "<topic>-<partition>.<id>-delete"
        return any(_PARTITION_DIR.sub("", d.name) in gone for d in data.iterdir())

    deadline = time.monotonic() + timeout
    while left():
        if time.monotonic() > deadline:
            raise RuntimeError(f"Deleted topics' files still on {name} after {timeout:.0f} s")
        time.sleep(1)


def create_topics(
    bootstrap: str, names: list[str], partitions: int, configs: dict[str, str] | None = None
) -> None:
    """Create fresh topics (in as few requests as the controller takes); a deletion still in
    progress is waited out."""
    delete_topics(bootstrap, names)
    client = admin(bootstrap)
    todo = list(names)
    for attempt in range(50):
        specs = [NewTopicSpec(n, partitions, None, configs or {}) for n in todo]
        failed = list(client.create_topics(specs))
        if not failed:
            _wait_ready(bootstrap, names, partitions)
            return
        if attempt == 49:
            raise RuntimeError(f"Could not create {failed} on {bootstrap}")
        todo = failed
        time.sleep(0.2)


def _wait_ready(bootstrap: str, names: list[str], partitions: int) -> None:
    """Until every partition has a leader that answers: a new topic's first requests
    otherwise fail with NOT_LEADER_FOR_PARTITION for a moment (thousands of new partitions:
    for longer). Gives up after a while in which no more got one: 30 s, and 10 ms more for
    each partition (a broker makes the logs of all the partitions of one request before it
    leads any: 10,000 took it 50 s here)."""
    client = admin(bootstrap)
    waiting = [(n, p) for n in names for p in range(partitions)]
    patience = 30 + len(waiting) / 100
    deadline = time.monotonic() + patience
    while waiting:
        try:
            unled = list(client.readable_offsets(waiting)[1])
        except KafkaAdminError:  # a topic the broker does not know yet
            unled = waiting
        if len(unled) < len(waiting):
            deadline = time.monotonic() + patience
        elif time.monotonic() > deadline:
            raise KafkaAdminError(f"{len(unled)} new partitions have no leader, e.g. {unled[0]}")
        waiting = unled
        time.sleep(0.1 if waiting else 0)


def create_topic(
    bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None
) -> None:
    create_topics(bootstrap, [name], partitions, configs)


def end_offsets(bootstrap: str, topics: dict[str, int]) -> dict[tuple[str, int], int]:
    """The end offset of every partition of `topics` (name -> partitions), in one request."""
    return admin(bootstrap).offsets([(t, p) for t, n in topics.items() for p in range(n)])


def destination_ends(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The destination's end offsets of `partitions`; empty while one is not visible yet."""
    try:
        return admin(DESTINATION).offsets(partitions)
    except KafkaAdminError:
        return {}


def fill(bootstrap: str, topics: list[str], records_per_topic: int, record_size: int) -> float:
    """Write `records_per_topic` records of `record_size` B (null keys) to each topic with one
    confluent-kafka producer, batched like the perf tools; returns the seconds it took. For
    many small topics, where a perf-test JVM per topic would take longer than the data."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 1048576,
            "acks": "all",
            "queue.buffering.max.kbytes": 1048576,
        }
    )
    value = b"x" * record_size
    started = time.monotonic()
    for _ in range(records_per_topic):
        for topic in topics:
            send(producer, topic, value)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"Could not write every record to {bootstrap}")
    return time.monotonic() - started


def bench_topics(bootstrap: str) -> list[str]:
    return sorted(n for n in admin(bootstrap).list_topic_names() if n.startswith(PREFIX))


def delete_group(bootstrap: str, group: str) -> None:
    """Remove a consumer group if it is still there (Kafka drops an empty one whose topics
    are gone, so usually it is not)."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    for future in client.delete_consumer_groups([group], request_timeout=10).values():
        try:
            future.result(timeout=15)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                log(f"Could not delete consumer group {group}: {exc}")


def django_on_own_database(name: str) -> None:
    """Set Django up on a fresh SQLite database of the benchmark's own (var/bench/<name>), so
    it runs beside `make demo` and touches none of its rows."""
    import os

    import django
    from django.apps import apps
    from django.core.management import call_command

    if apps.ready:  # a second case of the same run: the same database, emptied
        call_command("flush", interactive=False, verbosity=0)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    database = WORK / name
    database.unlink(missing_ok=True)
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    django.setup()
    call_command("migrate", verbosity=0)


def register_clusters(actor) -> dict:
    """The dev stack's two clusters registered (as bench-source and bench-destination) with
    the admin's SASL credentials and the links' own, by name; for a benchmark on its own
    database."""
    from django.conf import settings

    from devstack import kafka
    from replication.kafka.clusters import register_cluster

    clusters = {}
    for node in kafka.NODES:
        config = dict(kafka.sasl_client_config(node, settings.VAR_DIR))
        bootstrap = config.pop("bootstrap.servers")
        clusters[node.name] = register_cluster(
            actor,
            f"bench-{node.name}",
            bootstrap,
            config,
            kafka.link_credentials(node, settings.VAR_DIR),  # as `make demo` registers them
        )
    return clusters
