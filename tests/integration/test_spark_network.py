"""The engine listens to no stranger (issue 23: nothing listens beyond what it must).
In local mode its driver's RPC endpoint, block manager and Python workers are on loopback only;
on a standalone cluster it is refused without the cluster's shared secret. (The standalone
cluster with authentication on is tests/integration/test_spark_standalone.py.)"""

from __future__ import annotations

import ipaddress
import time

import psutil
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack import kafka
from replication.engine import status, supervise
from replication.models import ClusterLink
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, run_until_copied

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


def _listening(pid: int) -> list[tuple[str, int, str]]:
    """(address, port, process name) of every listening socket of `pid` and its descendants."""
    root = psutil.Process(pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    found.append((conn.laddr.ip, conn.laddr.port, proc.name()))
        except psutil.NoSuchProcess:
            pass  # a Python worker that just ended
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 on a dual-stack socket
    return (mapped or ip).is_loopback


def test_a_local_engine_listens_on_loopback_only(own_engine, make_link, settings):
    settings.SPARK_MASTER = "local[2]"
    topic = _topic_with_records()
    link = make_link()
    # Copied: the driver's context, its block manager and the copiers' Python workers are all
    # up, so every socket the engine will open is open.
    run_until_copied(link, [create_mirror(ACTOR, link, topic)], timeout=120)
    pid = status.status(link).pid
    assert pid, status.status(link)
    listening = _listening(pid)
    assert any(name == "java" for _, _, name in listening), listening  # the driver's RPC
    assert all(_loopback(address) for address, _, _ in listening), listening


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
