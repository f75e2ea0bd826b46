"""The dev stack the bench runs on, and small admin helpers over its two clusters."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from infra.kafka_admin import KafkaAdmin, KafkaAdminError, TopicNotFound

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


def admin(bootstrap: str) -> KafkaAdmin:
    return KafkaAdmin({"bootstrap.servers": bootstrap}, timeout=30)


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Delete `names` where they exist and wait until they are gone, so they can be re-made."""
    client = admin(bootstrap)
    present = [n for n in names if n in client.list_topic_names()]
    for name in present:
        with contextlib.suppress(TopicNotFound):
            client.delete_topic(name)
    deadline = time.monotonic() + 60
    while present and set(present) & client.list_topic_names():
        if time.monotonic() > deadline:
            raise RuntimeError(f"Topics not deleted on {bootstrap} after 60 s: {present}")
        time.sleep(0.2)


def create_topic(
    bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None
) -> None:
    """Create a fresh topic; a deletion still in progress is waited out."""
    delete_topics(bootstrap, [name])
    client = admin(bootstrap)
    for attempt in range(50):
        try:
            client.create_topic(name, partitions, None, configs or {})
            return
        except KafkaAdminError:
            if attempt == 49:
                raise
            time.sleep(0.2)


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    return admin(bootstrap).end_offsets(topic, partitions)


def bench_topics(bootstrap: str) -> list[str]:
    return sorted(n for n in admin(bootstrap).list_topic_names() if n.startswith(PREFIX))


def delete_group(bootstrap: str, group: str) -> None:
    """Remove a consumer group if it is still there (Kafka drops an empty one whose topics
    are gone, so usually it is not)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    for future in client.delete_consumer_groups([group], request_timeout=10).values():
        try:
            future.result(timeout=15)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                log(f"Could not delete consumer group {group}: {exc}")
