"""The answers of promote, failover, reverse and truncate-and-restore (each topic's
outcome), and of approval requests: the request, its plan and result, and an action done or
left waiting for approval.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from console.api.schemas.common import (
    ResourceCollectionMetadata,
    ResourceMetadata,
    Shape,
    Url,
    one_of,
)
from console.api.schemas.mirrors import AlterMirrorsData
from replication.models import ApprovalRequest as ApprovalRequestModel


class PartitionTruncation(Shape):
    """What a truncate-and-restore cut from one partition (set aside in its quarantine topic)."""

    partition_id: int
    offset_truncated_to: int
    messages_truncated: int
    records_to_copy: int = Field(
        description="Isthmus: records the promoted topic holds past offset_truncated_to, the "
        "only ones copied across"
    )


class StopMirrorData(AlterMirrorsData):
    """One mirror topic's outcome of a promote, failover, reverse or truncate-and-restore (or,
    validating, what it would be); its lags are those it was checked with."""

    mirror_status: str = Field(description="*Isthmus*: the mirror's state after the action.")
    messages_truncated: int | None = Field(
        default=None, description="truncate-and-restore: the records set aside, in all."
    )
    partition_level_truncation_data: list[PartitionTruncation] | None = Field(
        default=None,
        description="truncate-and-restore, with include_partition_level_truncation_data=true: "
        "per partition.",
    )
    quarantine_topic_name: str | None = Field(
        default=None,
        description="*Isthmus*: truncate-and-restore: the topic on the restored cluster that "
        "holds the records set aside, with their origin in headers.",
    )


class RequestTopicOutcome(Shape):
    """*Isthmus*: one topic of an approval request, as planned or as it came out."""

    mirror_topic: str
    error: str = Field(description="Empty when the topic went (or would go) as asked.")
    state: str = Field(description="The mirror's state.")
    lags: dict[str, int] = Field(description="Each partition's lag, by partition number.")


class PlannedPartition(Shape):
    """*Isthmus*: a truncate-and-restore's partition in its plan."""

    partition_id: int
    offset_truncated_to: int
    messages_truncated: int = Field(description="Records past the offset, set aside.")
    records_to_copy: int = Field(description="Records copied across from the promoted topic.")


class PlannedTopic(RequestTopicOutcome):
    """*Isthmus*: one topic's dry run in a plan."""

    partitions: list[PlannedPartition] = Field(
        description="truncate-and-restore: per partition; empty for the other actions."
    )


class PlannedProducers(Shape):
    """*Isthmus*: whether producers still write a topic the action concerns: its end offsets
    over about the last minute, as the lag sampler and the plans read them."""

    cluster: str
    topic: str
    state: Literal["WRITING", "QUIET", "UNKNOWN"]
    records: int = Field(description="Records written over watched_s; -1: not read yet.")
    watched_s: int
    words: str


class PlannedGroup(Shape):
    """*Isthmus*: a consumer group with offsets on a topic the action concerns, on one
    cluster, and whether the link's consumer offset sync has it."""

    group: str
    cluster: str
    topic: str
    sync: str = Field(
        description="IN_STEP, BEHIND_MIRROR, BEHIND_FLOW, SKIPPED, FAILED (the syncer's last "
        "word), SELECTED (not synced yet), NOT_SELECTED, SYNC_OFF; on the link's destination "
        "COPY (a source group's synced copy) or OWN."
    )
    words: str


class PlannedObject(Shape):
    """*Isthmus*: an object the plan names, with its page in the console."""

    kind: Literal["cluster", "link", "mirror", "flow"]
    name: str
    cluster: str = Field(description="The cluster it is on (a link's or mirror's destination).")
    link: str = Field(description="A flow's, link's or mirror's link; empty for a cluster.")
    url: Url


class RequestPlan(Shape):
    """*Isthmus*: what approving a request does, in words and numbers: the same plan the
    request's page and `kafka-mirrors --describe-request` show."""

    read_at: datetime
    summary: str
    source_cluster: str
    destination_cluster: str
    direction: str
    effects: list[str]
    topics: list[PlannedTopic]
    producers: list[PlannedProducers]
    groups: list[PlannedGroup]
    problems: list[str] = Field(description="What could not be read for it.")
    objects: list[PlannedObject]


class ApprovalRequest(Shape):
    """*Isthmus*: a promote, failover, link deletion, merge flow creation or deletion, or
    schema subjects made writable, waiting for (or done after) approval."""

    kind: Literal["IsthmusApprovalRequest"] = "IsthmusApprovalRequest"
    metadata: ResourceMetadata
    id: int = Field(description="The request's id.")
    action: one_of(ApprovalRequestModel.Action.values)  # type: ignore[valid-type]
    link_name: str
    mirror_topic_names: list[str]
    force: bool = Field(description="A link deletion that fails the link's mirrors over first.")
    merge_flow: dict[str, str | None] | None = Field(
        description="A merge flow's creation or deletion: the flow's name and, to create it, "
        "source_topic, destination_topic and mapping (null: chosen when it runs)."
    )
    schema_subjects: list[str] | None = Field(
        description="promote-subjects: the synced subjects to make writable on the destination."
    )
    reason: str
    requester: str
    state: one_of(ApprovalRequestModel.State.values)  # type: ignore[valid-type]
    approvals_required: int
    approved_by: list[str]
    created_at: datetime
    expires_at: datetime
    decided_by: str
    decision_reason: str
    progress: str
    plan: list[RequestTopicOutcome] = Field(description="The dry run made when it was asked.")
    plan_at_request: RequestPlan | None = Field(
        description="What approving would do, as it was when asked (null: asked before plans "
        "were kept)."
    )
    plan_now: RequestPlan | None = Field(
        description="What approving would do now, read afresh: on a pending request's own "
        "answer (null in lists, once decided, or when it cannot be read: see plan_now_error)."
    )
    plan_now_error: str = Field(description="Why plan_now could not be made; empty otherwise.")
    result: list[RequestTopicOutcome] = Field(description="What it did, once it ran.")
    console_url: Url = Field(description="The request's page in the console.")


class ApprovalRequestList(Shape):
    """*Isthmus*: approval requests, newest first."""

    kind: Literal["IsthmusApprovalRequestList"] = "IsthmusApprovalRequestList"
    metadata: ResourceCollectionMetadata
    data: list[ApprovalRequest]


class StopMirrorsResult(Shape):
    """A promote, failover, link deletion or merge flow creation or deletion: done (200, each
    topic's outcome) or waiting for approval (202, the request made)."""

    kind: Literal[
        "KafkaAlterMirrorsDataList",
        "IsthmusDeleteLink",
        "IsthmusCreateMergeFlow",
        "IsthmusDeleteMergeFlow",
        "IsthmusPromoteSchemaSubjects",
    ]
    metadata: ResourceCollectionMetadata
    data: list[StopMirrorData]
    approval_request: ApprovalRequest | None
    approvals_needed: int = Field(description="Approvals still needed; 0 when it ran.")
    note: str
