"""A merge flow's checkpoints as the beat keeps them: only those that moved, whether others
write into its topic (never unset), and thinned with age (every one for 15 minutes, then the
newest of each minute, none after a week)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from replication.models import FlowCheckpoint, MergeFlow
from replication.topics import flow_offsets
from replication.topics.merge_flows import FlowStatus

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture
def flow(make_flow) -> MergeFlow:
    return make_flow("topic1", "topic1", MergeFlow.Mapping.ONE_TO_ONE)


def reported(**partitions: tuple[int, int, bool]) -> FlowStatus:
    return FlowStatus(
        "ACTIVE",
        partitions={
            int(p[1:]): {"next": n, "checkpoint": [n, d], "others": o, "lag": 0, "source_end": n}
            for p, (n, d, o) in partitions.items()
        },
    )


def kept(flow: MergeFlow) -> list[tuple[int, int, int]]:
    rows = flow.checkpoints.order_by("partition", "source_next")
    return list(rows.values_list("partition", "source_next", "destination_next"))


def test_only_checkpoints_that_moved_are_kept(flow):
    flow_offsets.record_checkpoints(flow, reported(p0=(10, 12, False), p1=(5, 5, False)), NOW)
    flow_offsets.record_checkpoints(flow, reported(p0=(10, 12, False), p1=(9, 11, False)), NOW)
    assert kept(flow) == [(0, 10, 12), (1, 5, 5), (1, 9, 11)]
    assert MergeFlow.objects.get(pk=flow.pk).checkpointed == {"0": [10, 12], "1": [9, 11]}


def test_others_writing_is_remembered_once_seen(flow):
    flow_offsets.record_checkpoints(flow, reported(p0=(10, 12, True)), NOW)
    flow_offsets.record_checkpoints(flow, reported(p0=(20, 22, False)), NOW)
    assert MergeFlow.objects.get(pk=flow.pk).others_write
    assert "Others write into topic1 too" in flow_offsets.rule(flow).refused


def test_old_checkpoints_thin_to_the_newest_of_each_minute_and_go_after_a_week(flow):
    def at(minutes_ago: float, source_next: int) -> FlowCheckpoint:
        return FlowCheckpoint(
            flow=flow,
            partition=0,
            source_next=source_next,
            destination_next=source_next,
            taken_at=NOW - timedelta(minutes=minutes_ago),
        )

    FlowCheckpoint.objects.bulk_create(
        [
            at(60 * 24 * 8, 1),  # over a week: gone
            at(20 + 50 / 60, 10),  # within one minute, 20 minutes ago: only the newest stays
            at(20 + 30 / 60, 11),
            at(20 + 10 / 60, 12),
            at(5, 20),  # within 15 minutes: every one stays
            at(4.9, 21),
        ]
    )
    flow_offsets.thin(NOW)
    assert [s for _, s, _ in kept(flow)] == [12, 20, 21]
