"""Consumer offset sync's decisions (replication.topics.offset_sync), on in-memory clusters: which
groups are synced, to which offset (identical, translated, or the mirror's end for a group ahead of
the copy), what is left alone (a group running on the destination, one not selected) and what is not
written twice. That a consumer then resumes exactly where it stopped, record by record, is
tests/integration/test_offset_sync.py, on real brokers."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from devstack import kafka
from replication.governance import audit
from replication.kafka.connections import cluster_admin, source_admin
from replication.models import GroupOffsetSync
from replication.topics import offset_sync
from replication.topics.mirrors import create_mirror
from spark_jobs.translation import Entry, Runs

ACTOR = audit.Actor.system("tests")
Sync = GroupOffsetSync.State


def _groups(*names: str) -> str:
    return json.dumps(
        {"groupFilters": [{"name": n, "patternType": "PREFIXED", "filterType": "INCLUDE"}
                          for n in names]}
    )  # fmt: skip


SYNCING = {
    "cluster.link.paused": "true",
    "consumer.offset.sync.enable": "true",
    "consumer.offset.group.filters": _groups("app-"),
}


@pytest.fixture
def mirrored(memory_clusters, make_link, make_topic, topic_name):
    """A paused link syncing the offsets of groups named "app-…" (and `configs`), and a mirror
    of a source topic of two partitions, 10 records each, all copied."""

    def make(**configs: str):
        link = make_link({**SYNCING, **configs})
        topic = make_topic(kafka.SOURCE, f"{topic_name}-{len(configs)}", 2)
        mirror = create_mirror(ACTOR, link, topic)
        for p in (0, 1):
            memory_clusters["source"].produce(topic, p, 10)
            memory_clusters["destination"].produce(mirror.mirror_topic, p, 10)
        return link, mirror

    return make


@pytest.fixture
def synced(mirrored):
    return mirrored()


def _run(link) -> offset_sync.Outcome:
    return offset_sync.sync_offsets(
        link, timezone.now(), source_admin(link), cluster_admin(link.destination)
    )


def _held(memory_clusters, group: str) -> dict:
    return memory_clusters["destination"].groups[group].offsets


def test_a_groups_offsets_are_written_as_they_are_where_the_mirror_has_the_same_offsets(
    synced, memory_clusters
):
    link, mirror = synced
    memory_clusters["source"].commit(
        "app-1", {(mirror.source_topic, 0): 4, (mirror.source_topic, 1): 10}
    )

    outcome = _run(link)

    assert outcome.groups == {"app-1": Sync.IN_STEP} and outcome.written == {"app-1"}
    assert _held(memory_clusters, "app-1") == {
        (mirror.mirror_topic, 0): 4,
        (mirror.mirror_topic, 1): 10,
    }
    row = link.group_syncs.get(group="app-1")
    assert row.offsets == {f"{mirror.mirror_topic}/0": 4, f"{mirror.mirror_topic}/1": 10}
    assert row.written_at is not None
    # Nothing changed since: nothing is written again.
    assert _run(link).written == set()


def test_a_group_row_another_sync_made_meanwhile_is_updated_not_inserted_twice(
    synced, memory_clusters, monkeypatch
):
    # A reverse syncs its groups back while the beat's sync of the same link runs.
    link, mirror = synced
    memory_clusters["source"].commit("app-1", {(mirror.source_topic, 0): 4})
    save = offset_sync._save

    def other_sync_first(link, *args, **kwargs):
        GroupOffsetSync.objects.create(link=link, group="app-1", destination_group="app-1")
        return save(link, *args, **kwargs)

    monkeypatch.setattr(offset_sync, "_save", other_sync_first)
    assert _run(link).written == {"app-1"}
    row = link.group_syncs.get(group="app-1")
    assert row.offsets == {f"{mirror.mirror_topic}/0": 4} and row.state == Sync.IN_STEP


def test_a_translated_partition_gets_the_offset_of_the_next_record_the_group_would_read(
    synced, memory_clusters
):
    link, mirror = synced
    topic_id = cluster_admin(link.destination).describe_topic(mirror.mirror_topic).topic_id
    # Source offsets 0-3 copied to 0-3, then 4-5 never copied (aborted, say): 6 landed at 4.
    memory_clusters["destination"].translation[topic_id, 0] = Runs([Entry(6, 4)])
    memory_clusters["source"].commit("app-2", {(mirror.source_topic, 0): 5})

    _run(link)

    assert _held(memory_clusters, "app-2") == {(mirror.mirror_topic, 0): 4}


def test_a_group_ahead_of_the_copy_gets_the_mirrors_end_and_says_so(synced, memory_clusters):
    link, mirror = synced
    memory_clusters["source"].produce(mirror.source_topic, 1, 5)  # not copied yet
    memory_clusters["source"].commit("app-3", {(mirror.source_topic, 1): 14})

    outcome = _run(link)

    assert outcome.groups == {"app-3": Sync.BEHIND_MIRROR}
    assert _held(memory_clusters, "app-3") == {(mirror.mirror_topic, 1): 10}
    reason = link.group_syncs.get(group="app-3").reason
    assert f"read further than the mirror has copied ({mirror.mirror_topic}/1)" in reason


def test_a_group_running_on_the_destination_is_skipped_and_not_overwritten(synced, memory_clusters):
    link, mirror = synced
    memory_clusters["destination"].commit("app-4", {(mirror.mirror_topic, 0): 2})
    memory_clusters["destination"].join("app-4", mirror.mirror_topic, 0)
    memory_clusters["source"].commit("app-4", {(mirror.source_topic, 0): 7})

    outcome = _run(link)

    assert outcome.groups == {"app-4": Sync.SKIPPED} and outcome.written == set()
    assert _held(memory_clusters, "app-4") == {(mirror.mirror_topic, 0): 2}
    reason = link.group_syncs.get(group="app-4").reason
    assert "'app-4' has 1 active member(s) on the destination (Stable)" in reason
    assert "Stop its consumers there, or exclude the group" in reason


def test_only_the_groups_the_filters_select_are_synced_and_shown(synced, memory_clusters):
    link, mirror = synced
    memory_clusters["source"].commit("app-5", {(mirror.source_topic, 0): 1})
    memory_clusters["source"].commit("other", {(mirror.source_topic, 0): 1})

    _run(link)

    assert set(link.group_syncs.values_list("group", flat=True)) == {"app-5"}
    assert "other" not in memory_clusters["destination"].groups
    shown = offset_sync.status(link)
    assert shown.enabled and shown.total == 1 and shown.counts == {"in step": 1}


def test_a_link_with_a_group_prefix_writes_the_prefixed_group(mirrored, memory_clusters):
    link, mirror = mirrored(
        **{"cluster.link.prefix": "dc1.", "consumer.group.prefix.enable": "true"}
    )
    memory_clusters["source"].commit("app-6", {(mirror.source_topic, 0): 3})

    _run(link)

    assert link.group_syncs.get(group="app-6").destination_group == "dc1.app-6"
    assert _held(memory_clusters, "dc1.app-6") == {(mirror.mirror_topic, 0): 3}


def test_sync_enabled_without_a_group_filter_says_what_to_set(make_link):
    link = make_link({"cluster.link.paused": "true", "consumer.offset.sync.enable": "true"})

    with pytest.raises(
        offset_sync.NotConfigured, match="consumer.offset.group.filters includes no group"
    ):
        offset_sync.group_filters(link)
