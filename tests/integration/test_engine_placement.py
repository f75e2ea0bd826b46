"""A source-initiated link copied by the engine beside its source (issue 47), on the real
clusters. The source is registered in a network zone of its own, whose engine `manage.py
engine` keeps (a process of its own, as on a host of that zone). The link is made as
Confluent's tools make it, through the REST API: its destination half with
connection.mode=INBOUND, then its source half on the source, link.mode=SOURCE. The zone's
engine alone runs it and copies it record by record; the console's own engine never has it.
The refusals and the waiting before the source half: tests/db/test_engine_placement.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.urls import reverse

from devstack import kafka
from replication.core.redis_channel import client
from replication.engine import process, status
from replication.models import ClusterLink, KafkaCluster
from spark_jobs import control
from tests.conftest import ROOT, TEST_REDIS_URL, _database_url_for_worker, stop_process
from tests.kafka_clients import ordinary, write_numbered
from tests.mirror_checks import assert_exact_copy, run_until_copied

pytestmark = pytest.mark.integration


@pytest.fixture
def zone_engine(registered_clusters, tmp_path):
    """The source's network zone, a name of the test's own: its engine kept by `manage.py
    engine` on the tests' database and Redis. Its name."""
    name = f"zone-{uuid.uuid4().hex[:6]}"
    KafkaCluster.objects.filter(pk=registered_clusters["source"].pk).update(engine=name)
    env = {
        **os.environ,
        "REDIS_URL": TEST_REDIS_URL,
        "DATABASE_URL": _database_url_for_worker(),
        "ISTHMUS_ENGINE_NAME": name,
        "ISTHMUS_ENGINE_LAZY": "1",  # started with the zone's first link to copy
    }
    log = tmp_path / "keeper.log"
    with open(log, "wb") as out:
        keeper = subprocess.Popen(
            [sys.executable, "manage.py", "engine"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    yield name
    stop_process(keeper, 60)  # it stops its engine first
    print(log.read_text()[-2000:])
    engine = process.engine_id(name=name)
    r = client()
    r.delete(*r.keys(control.engine_pattern(engine)), process.supervision_key(name))
    shutil.rmtree(settings.STREAM_DIR / f"engine-{engine}", ignore_errors=True)


def test_a_source_initiated_link_is_copied_exactly_by_the_engine_beside_its_source(
    api, registered_clusters, zone_engine, make_link, make_topic, topic_name, client_as
):
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    admin, name = api("admin"), f"hybrid-{topic_name[-8:]}"
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    write_numbered(ordinary(kafka.SOURCE), topic_name, 0, 200)

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
    assert link.engine == zone_engine
    run_until_copied(link, [link.mirrors.get()], timeout=240)

    assert len(assert_exact_copy(topic_name, topic_name)) == 200
    r = client()
    zone = control.engine_heartbeat(r, process.engine_id(name=zone_engine))
    assert str(link.link_id) in zone.get("links", {}), zone
    assert status.status(link).pid == zone["pid"]
    # The console's own engine was never handed the link, and runs nothing of it.
    assert not r.hexists(control.links_key(process.engine_id(name="")), str(link.link_id))
    assert str(link.link_id) not in (process.engine_links(r, "") or {})
    viewer = client_as("viewer")
    page = viewer.get(reverse("link-detail", args=[destination.name, name])).content.decode()
    assert f'data-engine="{zone_engine}"' in page
    plane = viewer.get(reverse("data-plane")).content.decode()
    zone_part = plane[plane.index(f'id="engine-{zone_engine}"') :]
    assert zone_part.startswith(f'id="engine-{zone_engine}" data-state="RUNNING"'), zone_part
    assert f'data-link="{name}"' in zone_part
