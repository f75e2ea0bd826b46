"""A source-initiated link copied by the engine beside its source (issue 47), on real clusters,
with the source behind a firewall that lets nothing in. The source is a broker of its own in a
network namespace (tests/zone_network.py): the zone's keeper (`manage.py engine`) and its engine
run there too, and reach out to Redis and the destination; the test's console, its Celery and
the console's own engine find nothing at the source's address. The link is made as Confluent's
tools make it, through the REST API: its destination half with connection.mode=INBOUND, then its
source half on the source, link.mode=SOURCE; the source is registered, its mirror created and
its lag read through the zone's keeper. The zone's engine alone runs it, and the mirror holds
every record as the zone's producer wrote it. The refusals and the waiting before the source
half, and the calls through a keeper: tests/db/test_engine_placement.py, test_zone_calls.py."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import uuid

import pytest
from django.conf import settings
from django.urls import reverse

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError, Unreachable
from infra.processes import wait_for
from replication.core.redis_channel import client
from replication.engine import process, status
from replication.governance import audit
from replication.kafka import zone_calls
from replication.kafka.clusters import register_cluster
from replication.kafka.zone_calls import Target, ZoneAdmin
from replication.models import ClusterLink, KafkaCluster
from spark_jobs import control
from tests import zone_network
from tests.conftest import TEST_REDIS_URL, _database_url_for_worker
from tests.mirror_checks import read_all, run_until_copied

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dc(transactional_db, registered_clusters, tmp_path):
    """Network zone "dc": its namespace, its broker, its keeper. (name, the broker's
    bootstrap, the zone)."""
    if why := zone_network.unavailable():
        pytest.skip(f"no network zone of its own here: {why}")
    name = f"dc-{uuid.uuid4().hex[:6]}"
    redis_port = int(TEST_REDIS_URL.split(":")[2].split("/")[0])
    carried = [redis_port] + [
        port for b in kafka.DESTINATION.brokers for port in (b.plaintext_port, b.sasl_port)
    ]
    zone = zone_network.Zone(carried)
    broker_port = _free_port()
    home = tmp_path / "dc"
    zone_network.broker_properties(home, broker_port, _free_port())
    zone_network.start_broker(zone, home)
    env = {
        **os.environ,
        "REDIS_URL": TEST_REDIS_URL,
        "DATABASE_URL": _database_url_for_worker(),
        "ISTHMUS_ENGINE_NAME": name,
        "ISTHMUS_ENGINE_LAZY": "1",  # started with the zone's first link to copy
    }
    zone.start([sys.executable, "manage.py", "engine"], tmp_path / "keeper.log", env=env)
    bootstrap = f"127.0.0.1:{broker_port}"
    try:
        assert wait_for(lambda: client().exists(zone_calls.keeper_key(name)), 30, 0.2)
        reached = ZoneAdmin(Target(name, config={"bootstrap.servers": bootstrap}))
        assert wait_for(reached.describe_cluster, 90, 1, ignore=(KafkaAdminError,))
        yield name, bootstrap, zone
    finally:
        zone.stop()  # the keeper stops its engine first
        print((tmp_path / "keeper.log").read_text()[-3000:])
        engine = process.engine_id(name=name)
        r = client()
        r.delete(*r.keys(control.engine_pattern(engine)), process.supervision_key(name))
        shutil.rmtree(settings.STREAM_DIR / f"engine-{engine}", ignore_errors=True)


def test_a_source_behind_a_firewall_is_copied_exactly_by_the_engine_beside_it(
    api, registered_clusters, dc, make_link, topic_name, client_as
):
    zone_name, bootstrap, zone = dc
    destination = registered_clusters["destination"]
    with pytest.raises(Unreachable):  # from the console's side, nothing is there
        KafkaAdmin({"bootstrap.servers": bootstrap}, timeout=2).describe_cluster()
    written = zone_network.produce(zone, bootstrap, topic_name, 2, 200)
    source = register_cluster(audit.Actor.system("tests"), "dc", bootstrap, {}, engine=zone_name)
    admin, name = api("admin"), f"hybrid-{topic_name[-8:]}"

    def create(on: KafkaCluster, configs: dict[str, str], **body: str):
        return admin.post(
            f"/kafka/v3/clusters/{on.cluster_id}/links?link_name={name}",
            {"configs": [{"name": k, "value": v} for k, v in configs.items()], **body},
            content_type="application/json",
        )

    inbound = create(
        destination, {"connection.mode": "INBOUND"}, source_cluster_id=source.cluster_id
    )
    assert inbound.status_code == 204, inbound.content
    mirrors = f"/kafka/v3/clusters/{destination.cluster_id}/links/{name}/mirrors"
    made = admin.post(mirrors, {"source_topic_name": topic_name}, content_type="application/json")
    assert made.status_code == 204, made.content
    outbound = create(
        source,
        {"link.mode": "SOURCE", "bootstrap.servers": kafka.DESTINATION.bootstrap},
        destination_cluster_id=destination.cluster_id,
    )
    assert outbound.status_code == 204, outbound.content

    link = ClusterLink.objects.get(name=name)
    assert link.engine == zone_name
    run_until_copied(link, [link.mirrors.get()], timeout=240)  # its lag read in the zone

    mirrored = read_all(kafka.DESTINATION.bootstrap, topic_name)
    assert [
        (r.partition, r.offset, r.key, r.value, r.headers, r.timestamp) for r in mirrored
    ] == written
    r = client()
    heartbeat = control.engine_heartbeat(r, process.engine_id(name=zone_name))
    assert str(link.link_id) in heartbeat.get("links", {}), heartbeat
    assert status.status(link).pid == heartbeat["pid"]
    # The console's own engine was never handed the link, and runs nothing of it.
    assert not r.hexists(control.links_key(process.engine_id(name="")), str(link.link_id))
    assert str(link.link_id) not in (process.engine_links(r, "") or {})
    viewer = client_as("viewer")
    page = viewer.get(reverse("link-detail", args=[destination.name, name])).content.decode()
    assert f'data-engine="{zone_name}"' in page
    plane = viewer.get(reverse("data-plane")).content.decode()
    zone_part = plane[plane.index(f'id="engine-{zone_name}"') :]
    assert zone_part.startswith(f'id="engine-{zone_name}" data-state="RUNNING"'), zone_part
    assert f'data-link="{name}"' in zone_part
    topics = viewer.get(reverse("cluster-detail", args=["dc"])).content.decode()
    assert topic_name in topics  # the source's topics, read in its zone
