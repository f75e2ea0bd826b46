"""The engine listens to no stranger (issue 23: nothing listens beyond what it must): on a
standalone cluster it is refused without the cluster's shared secret. (In local mode, that it
listens on loopback only is checked by tests/integration/test_engine_links.py, on an engine
it starts anyway; the standalone cluster with authentication on is
tests/integration/test_spark_standalone.py.)"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from devstack import kafka
from infra.admin_client import AdminClient
from replication.engine import status, supervise
from replication.models import ClusterLink
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _topic_with_records() -> str:
    topic = leftovers.unique_name("loopback")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    recent = int(time.time() * 1000) - 600_000
    for i in range(100):
        producer.produce(topic, key=str(i).encode(), value=b"v", timestamp=recent + i)
    assert producer.flush(30) == 0
    return topic


def test_a_standalone_master_without_the_shared_secret_fails_the_link_saying_what_to_set(
    own_engine, make_link, settings
):
    settings.SPARK_MASTER = "spark://127.0.0.1:7077"
    settings.SPARK_AUTH_SECRET = ""
    topic = _topic_with_records()
    link = make_link()
    create_mirror(ACTOR, link, topic)
    supervise.supervise(link)
    link.refresh_from_db()
    assert link.state == ClusterLink.State.FAILED
    assert "set ISTHMUS_SPARK_AUTH_SECRET" in link.error_message, link.error_message
    assert status.status(link).pid is None  # nothing was started
