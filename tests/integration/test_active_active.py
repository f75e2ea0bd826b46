"""Prefixed active-active on the real clusters: a bidirectional link whose halves name their
mirrors after the cluster they come from, automatic mirrors both ways, and the loop rule: a
topic that is itself a mirror fed from the other cluster is never mirrored back, whatever the
filters select, and the filter preview says which it left out and why.

The source cluster plays dc1 and the destination dc2. Prefixes carry the test's own marker,
so filters that select them select nothing of other tests.
"""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.models import ClusterLink
from replication.sync import filter_preview, syncers
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import ordinary, write_numbered
from tests.mirror_checks import ACTOR, read_all, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def included(*prefixes: str) -> str:
    return json.dumps(
        {
            "topicFilters": [
                {"name": p, "patternType": "PREFIXED", "filterType": "INCLUDE"} for p in prefixes
            ]
        }
    )


def refresh(link: ClusterLink) -> None:
    """One syncer run of the link with its metadata refresh (and so auto-create) due."""
    ClusterLink.objects.filter(pk=link.pk).update(metadata_refreshed_at=None)
    link.refresh_from_db()
    syncers.sync_link(link, timezone.now())
    link.refresh_from_db()


def topics_on(node: kafka.KafkaNode, marker: str) -> set[str]:
    return {t for t in KafkaAdmin(admin_config(node)).list_topic_names() if marker in t}


def test_prefixed_active_active_mirrors_each_side_once_and_never_loops(
    bidirectional, make_topic, topic_name
):
    tag = topic_name[-6:]
    dc1, dc2 = f"dc1{tag}.", f"dc2{tag}."
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    make_topic(kafka.DESTINATION, topic_name, partitions=2)
    # Filters that select the topic, and each side's mirrors too: only the loop rule keeps
    # the mirrors from being mirrored back under ever longer names.
    into_dc2 = bidirectional(
        **{
            "cluster.link.prefix": dc1,
            "remote.cluster.link.prefix": dc2,
            "auto.create.mirror.topics.enable": "true",
            "auto.create.mirror.topics.filters": included(topic_name, dc1, dc2),
        }
    )
    into_dc1 = peer_of(into_dc2)
    assert (into_dc2.prefix, into_dc1.prefix) == (dc1, dc2)
    assert into_dc1.configs["remote.cluster.link.prefix"] == dc1

    for _ in range(3):  # more rounds than a loop would need to show
        refresh(into_dc2)
        refresh(into_dc1)
    assert topics_on(kafka.DESTINATION, tag) == {topic_name, dc1 + topic_name}
    assert topics_on(kafka.SOURCE, tag) == {topic_name, dc2 + topic_name}
    assert not into_dc2.sync_problems and not into_dc1.sync_problems

    # The preview names the mirror it leaves out, and why.
    chosen = filters.parse_names(included(topic_name, dc1, dc2), filters.TOPICS)
    preview = filter_preview.preview_topics(into_dc1, chosen)
    assert preview.selected.shown == [topic_name]
    assert preview.looping == [
        (
            dc1 + topic_name,
            f"a mirror of source's topic {topic_name} over link {into_dc2.name}",
        )
    ]
    # By hand too: refused, saying why and what to read instead.
    with pytest.raises(ReplicationError) as refused:
        create_mirror(ACTOR, into_dc2, dc2 + topic_name)
    assert str(refused.value) == (
        f"Source topic '{dc2}{topic_name}' is a mirror of destination's topic {topic_name} "
        f"over link {into_dc1.name}: mirroring it would copy destination's own records back "
        "to it. Read destination's topic itself there. Nothing was changed."
    )
    assert refused.value.status == 409

    # Each side writes its own topic; each reads every record once: its own, and the other
    # side's through the mirror.
    write_numbered(ordinary(kafka.SOURCE), topic_name, 0, 50)
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 1000, 50)
    run_until_copied(into_dc2, list(into_dc2.mirrors.all()))
    run_until_copied(into_dc1, list(into_dc1.mirrors.all()))
    want = {str(i).encode() for i in [*range(50), *range(1000, 1050)]}
    for node, mirror in ((kafka.SOURCE, dc2 + topic_name), (kafka.DESTINATION, dc1 + topic_name)):
        keys = [r.key for t in (topic_name, mirror) for r in read_all(node.bootstrap, t)]
        assert len(keys) == 100 and set(keys) == want, node.name
