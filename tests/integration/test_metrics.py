"""Prometheus metrics: links, their streams and each mirror partition's offsets and lag."""

import pytest

from devstack import kafka
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.observe import lag
from replication.topics.mirrors import create_mirror
from tests.kafka_clients import produce

pytestmark = pytest.mark.integration


def test_metrics_show_link_state_and_mirror_lag_to_a_viewer_token(
    client, users, make_link, make_topic, topic_name
):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic_name,
        [{"value": b"x", "partition": 1}] * 3,
    )
    create_mirror(audit.Actor.system("tests"), link, topic_name)
    lag.sample_all()  # as the beat does every 10 s: a scrape shows the latest reading
    _, secret = create_token(audit.Actor.system("tests"), users["viewer"], "prometheus")

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {secret}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    text = response.content.decode()
    ids = f'link="{link.name}",destination="destination"'
    assert f'isthmus_link_state{{{ids},state="ACTIVE"}} 1' in text
    assert f"isthmus_link_stream_running{{{ids}}} 0" in text
    mirror = f'{ids},mirror="{topic_name}"'
    assert f'isthmus_mirror_partition_lag{{{mirror},partition="1"}} 3' in text
    assert f'isthmus_mirror_partition_source_high_watermark{{{mirror},partition="1"}} 3' in text
    assert f'isthmus_mirror_partition_offsets_translated{{{mirror},partition="0"}} 0' in text
    assert "# TYPE isthmus_mirror_partition_lag gauge" in text
    assert f"isthmus_mirror_lag_read_age_seconds{{{mirror}}} " in text


def test_metrics_need_a_token_or_a_session(client, registered_clusters):
    assert client.get("/metrics").status_code == 401
