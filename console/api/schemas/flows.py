"""The answers about merge flows: a flow with each partition's progress and its consumer
offset sync, and what a pasted Replicator configuration stands for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.api.schemas.common import (
    ResourceCollectionMetadata,
    ResourceMetadata,
    Shape,
    one_of,
)
from replication.models import (
    GroupOffsetSync,
    MergeFlow,
)


class FlowPartition(Shape):
    """*Isthmus*: how far a merge flow copied one source partition."""

    partition_id: int
    next_source_offset: int = Field(description="Every source record before it is copied.")
    source_end_offset: int = Field(description="The source's end, as last fetched; -1 unknown.")
    lag: int = Field(description="Source records not copied yet.")


class FlowGroup(Shape):
    """*Isthmus*: a consumer group's place in a merge flow's destination topic, as synced."""

    group_name: str = Field(description="The group on the link's source.")
    destination_group_name: str
    state: one_of(GroupOffsetSync.State.values)  # type: ignore[valid-type]
    offsets: dict[str, int] = Field(description="Destination partition -> offset written.")
    may_repeat: int = Field(
        description="Records the group may read again after it moves, at most (the bound)."
    )
    reason: str | None


class FlowConsumerOffsets(Shape):
    """*Isthmus*: consumer offset sync for a merge flow's topics (through its checkpoints)."""

    sync_enabled: bool = Field(description="The link's consumer.offset.sync.enable.")
    translated: bool = Field(description="Whether a group's place translates for this flow.")
    reverse_flow_name: str | None = Field(
        description="Active-active: the flow the other way, whose checkpoints count too."
    )
    reason: str | None = Field(description="Why groups are not synced for this flow.")
    groups: list[FlowGroup]


class MergeFlowData(Shape):
    """*Isthmus*: a merge flow. A source topic copied over a link into an ordinary, writable
    topic of any name, exactly once, each record with its origin in the `isthmus.origin`
    header. Offsets are NOT preserved (the destination topic may have other writers): this is
    not a mirror, and cannot be promoted or failed over."""

    kind: Literal["MergeFlowData"] = "MergeFlowData"
    metadata: ResourceMetadata
    flow_name: str
    link_name: str
    source_topic_name: str
    destination_topic_name: str
    partition_mapping: one_of(MergeFlow.Mapping.values) = Field(  # type: ignore[valid-type]
        description="one-to-one: source partition p into partition p; by-key: as Kafka's "
        "default partitioner places the record's key."
    )
    offsets_preserved: Literal[False] = False
    state: one_of(MergeFlow.State.values)  # type: ignore[valid-type]
    records_copied: int = Field(description="By the engine since it (re)started.")
    records_skipped: int = Field(
        description="Left out by the loop rule: they came from the destination cluster."
    )
    lag: int = Field(description="Source records not copied yet, over all partitions.")
    partitions: list[FlowPartition]
    error_message: str | None
    created_topic: bool = Field(description="Whether Isthmus made the destination topic.")
    state_time: str
    consumer_offsets: FlowConsumerOffsets


class MergeFlowDataList(Shape):
    """*Isthmus*: merge flows."""

    kind: Literal["MergeFlowDataList"] = "MergeFlowDataList"
    metadata: ResourceCollectionMetadata
    data: list[MergeFlowData]


class PlannedFlow(Shape):
    """*Isthmus*: a merge flow a Replicator configuration stands for."""

    source_topic_name: str
    destination_topic_name: str
    exists: bool = Field(description="The link has this flow already: it is left as it is.")
    created: bool = Field(description="Made by this call.")
    approval_request_id: int | None = Field(
        description="The link's policy asks for approval: the request made for it."
    )
    error_message: str | None = Field(description="Why it could not be made, if it was not.")


class ReplicatorImport(Shape):
    """*Isthmus*: what a Replicator connector's configuration stands for here, and (unless
    validate_only) what was made of it."""

    kind: Literal["ReplicatorImport"] = "ReplicatorImport"
    connector: str
    link_name: str
    flows: list[PlannedFlow]
    notes: list[str] = Field(description="What of the configuration is not used, and why.")
