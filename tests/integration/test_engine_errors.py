"""The engine's own errors reach the user, in words, on the link's page: a copier slot that
dies and restarts, the engine failing as it starts, and a mirror topic that cannot grow."""

from __future__ import annotations

import contextlib
import html
import signal
import time

import psutil
import pytest
from confluent_kafka import Producer
from django.urls import reverse

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import read_pidfile, wait_for
from replication.engine import process, status, supervise
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, eventually, run_until_copied

pytestmark = pytest.mark.integration

RECENT = int(time.time() * 1000) - 600_000


def _write(topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=b"v", timestamp=RECENT + i)
    assert producer.flush(30) == 0


def _page(client, link) -> str:
    page = client.get(reverse("link-detail", args=[link.destination.name, link.name]))
    assert page.status_code == 200
    return html.unescape(page.content.decode())


def _until_shown(client, link, words: str, timeout: float) -> str:
    """The link's page once it says `words` (supervising the link meanwhile, as the beat
    does)."""

    def shown() -> str:
        supervise.supervise(link)
        page = _page(client, link)
        return page if words in page else ""

    return eventually(shown, timeout, f"{words!r} on the link page")


def _slot_workers() -> list[psutil.Process]:
    """The Python workers running the engine's copier slots (forked by PySpark's daemon)."""
    running = read_pidfile(process.pidfile())
    if running is None:
        return []
    jvm = psutil.Process(running.pid)
    found = []
    for child in jvm.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "pyspark.daemon" in " ".join(child.cmdline()) and child.parent().pid != jvm.pid:
                found.append(child)
    return found


def test_a_copier_slot_that_dies_is_shown_on_the_link_page_while_it_restarts(
    own_engine, make_link, make_topic, topic_name, client_as
):
    make_topic(kafka.SOURCE, topic_name, partitions=4)
    _write(topic_name, 100)
    link = make_link()
    run_until_copied(link, [create_mirror(ACTOR, link, topic_name)], timeout=180)
    killed = 0
    for worker in _slot_workers():
        with contextlib.suppress(psutil.NoSuchProcess):  # (one that ended by itself meanwhile)
            worker.send_signal(signal.SIGKILL)
            killed += 1
    assert killed, "no copier slot's Python worker to kill"
    page = _until_shown(client_as("viewer"), link, "is restarting", 30)
    shown = page[page.index("is restarting") :][:200]
    assert "is restarting: a copier slot's Python worker died (killed, or out of memory)" in page, (
        shown
    )
    # It restarts, and the message goes once it runs again.
    client = client_as("viewer")
    eventually(lambda: "is restarting" not in _page(client, link), 60, "the slot running again")


def test_an_engine_that_fails_as_it_starts_says_why_on_the_link_page(
    own_engine, make_link, make_topic, topic_name, client_as, settings
):
    # Spark refuses to start with too little memory, and says so.
    settings.SPARK_CONF = {"spark.testing.memory": "1"}
    make_topic(kafka.SOURCE, topic_name)
    link = make_link()
    create_mirror(ACTOR, link, topic_name)
    page = _until_shown(client_as("viewer"), link, "System memory 1 must be at least", 120)
    assert "RESTARTING" in page and "spark.driver.memory" in page
    assert status.status(link).failures >= 1


def test_a_mirror_topic_that_cannot_grow_with_its_source_says_so_on_the_link_page(
    db, make_link, make_topic, topic_name, client_as
):
    make_topic(kafka.SOURCE, topic_name)
    _write(topic_name, 10)
    link = make_link()
    run_until_copied(link, [create_mirror(ACTOR, link, topic_name)], timeout=120)
    # The mirror topic is deleted on the destination behind the console's back, and its
    # source gains a partition: the engine cannot grow it, and says so until it can.
    KafkaAdmin(admin_config(kafka.DESTINATION)).delete_topic(topic_name)
    KafkaAdmin(admin_config(kafka.SOURCE)).create_partitions(topic_name, 2)
    page = _until_shown(client_as("viewer"), link, "cannot read the mirror topics' partitions", 30)
    assert topic_name in page
    assert wait_for(lambda: status.status(link).state == "RUNNING", 10)  # the others copy on
