"""A bidirectional link made as Confluent documents it (issue 47), on the real clusters: created
through the REST API on each cluster (`remote_cluster_id`, link.mode=BIDIRECTIONAL; the second
create with the first half's cluster_link_id, as `confluent kafka link create --remote-cluster`
sends them), the second create answered with the existing half and nothing made, then a mirror
created on it through the API and reversed (reverse-and-start-mirror): nothing copied, both
topics equal."""

from __future__ import annotations

import pytest

from devstack import kafka
from replication.cutover import reverse
from replication.models import ClusterLink
from replication.topics.links import peer_of
from tests.db.test_reverse import ACTOR, State
from tests.kafka_clients import ordinary, write_numbered
from tests.mirror_checks import read_all, run_until_copied

pytestmark = pytest.mark.integration


def test_a_link_created_on_both_sides_as_confluent_does_it_reverses_a_mirror(
    api, registered_clusters, make_link, make_topic, topic_name
):
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    client, name = api("admin"), f"both-{topic_name[-8:]}"

    def create(on, remote, **body):
        return client.post(
            f"/kafka/v3/clusters/{on.cluster_id}/links?link_name={name}",
            {
                "remote_cluster_id": remote.cluster_id,
                "configs": [{"name": "link.mode", "value": "BIDIRECTIONAL"}],
                **body,
            },
            content_type="application/json",
        )

    first = create(destination, source)
    assert first.status_code == 204, first.content
    made = client.get(f"/kafka/v3/clusters/{destination.cluster_id}/links/{name}").json()
    second = create(source, destination, cluster_link_id=made["cluster_link_id"])
    assert second.status_code == 200, second.content
    assert "Nothing new was made" in second["Warning"]
    assert second.json()["other_half"]["cluster_id"] == destination.cluster_id
    assert ClusterLink.objects.filter(name=name).count() == 2

    make_topic(kafka.SOURCE, topic_name, partitions=2)
    write_numbered(ordinary(kafka.SOURCE), topic_name, 0, 100)
    base = f"/kafka/v3/clusters/{destination.cluster_id}/links/{name}/mirrors"
    created = client.post(base, {"source_topic_name": topic_name}, content_type="application/json")
    assert created.status_code == 204, created.content
    link = ClusterLink.objects.get(name=name, destination=destination)
    run_until_copied(link, [link.mirrors.get(mirror_topic=topic_name)])
    before = read_all(kafka.SOURCE.bootstrap, topic_name)

    # The reverse as the API's reverse-and-start-mirror runs it, waited for here (a worker
    # finishes it when asked through the API: test_reverse.py).
    (outcome,) = reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START, wait=True)
    assert (outcome.error, outcome.state) == ("", State.STOPPED)
    back = peer_of(link).mirrors.get(mirror_topic=topic_name)
    assert (back.source_topic, back.state) == (topic_name, State.ACTIVE)
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == before  # nothing copied
    assert read_all(kafka.DESTINATION.bootstrap, topic_name) == before
