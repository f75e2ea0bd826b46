"""A link's application on a Spark standalone cluster of one worker (tests/spark_cluster.py:
executors outside the checkout, on a Python without the project, so the code reaches them only
as the launcher ships it).
"""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from devstack import kafka
from infra.admin_client import AdminClient
from replication.topics.mirrors import create_mirror
from tests import leftovers, spark_cluster
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, assert_exact_copy, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CORES = 2  # the worker's, and the application's copier tasks
RECORDS = 40_000
PARTITIONS = 4


@pytest.fixture(scope="module")
def standalone():
    """A Spark standalone master and one worker of CORES cores."""
    with spark_cluster.standalone(workers=1, cores=CORES) as cluster:
        yield cluster


def _source_topic() -> str:
    """RECORDS records over PARTITIONS partitions, with keys, headers and timestamps; some
    values null, some empty."""
    topic = leftovers.unique_name("standalone")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer(
        {"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 20, "batch.size": 500_000}
    )
    recent = int(time.time() * 1000) - 600_000
    for i in range(RECORDS):
        value = None if i % 1000 == 7 else b"" if i % 1000 == 8 else random.randbytes(200)
        while True:
            try:
                producer.produce(
                    topic,
                    key=str(i).encode(),
                    value=value,
                    partition=i % PARTITIONS,
                    timestamp=recent + i,
                    headers=[("i", str(i).encode()), ("bin", bytes([i % 256]))],
                )
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    return topic


def test_the_engine_on_a_standalone_cluster_copies_two_links_exactly_on_its_worker(
    own_engine, make_link, standalone, settings
):
    settings.SPARK_MASTER = standalone.url
    settings.SPARK_AUTH_SECRET = spark_cluster.AUTH_SECRET
    settings.STREAM_TASKS = CORES
    settings.SPARK_CONF = spark_cluster.engine_conf(standalone, CORES)
    topics = [_source_topic(), _source_topic()]
    links = [make_link(), make_link()]
    mirrors = [create_mirror(ACTOR, link, topic) for link, topic in zip(links, topics, strict=True)]
    for link, mirror in zip(links, mirrors, strict=True):
        run_until_copied(link, [mirror], timeout=180)
    for topic in topics:
        assert len(assert_exact_copy(topic, topic)) == RECORDS

    # Both links' copiers ran in the one application's executor, in the Python without the
    # project, from the archive the launcher shipped.
    (worker,) = standalone.workers
    (app,) = worker.work.glob("app-*")
    executors = [d for d in app.iterdir() if (d / "stderr").exists()]
    assert executors, f"no executor ran in {app}"
    stderr = "".join((d / "stderr").read_text() for d in executors)
    for link in links:
        for slot in range(CORES):
            assert f"Link {link.link_id}, slot {slot}: copying" in stderr, stderr[-3000:]
    assert all((d / "isthmus-stream.zip").exists() for d in executors), list(app.rglob("*"))
    assert spark_cluster.executor_pythons(worker.work) == {standalone.python}
