"""Rows the database tests share (nothing here reaches a cluster)."""

from __future__ import annotations

import pytest

from replication.models import ClusterLink, KafkaCluster, MergeFlow


@pytest.fixture
def make_flow():
    """A merge flow over a link "from-dc1" into cluster "dc2"."""

    def make(source: str, destination: str, mapping: str) -> MergeFlow:
        cluster = KafkaCluster.objects.create(name="dc2", bootstrap_servers="127.0.0.1:1")
        link = ClusterLink.objects.create(
            name="from-dc1", destination=cluster, source_cluster_id="x"
        )
        return MergeFlow.objects.create(
            name=f"from-dc1.{source}",
            link=link,
            destination=cluster,
            source_topic=source,
            destination_topic=destination,
            mapping=mapping,
        )

    return make
