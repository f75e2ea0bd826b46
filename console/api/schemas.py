"""Every body the JSON API sends or takes, defined once.

The views build their answers from these models (`respond`), and the OpenAPI document takes
its schemas from them (`components`), so the two cannot drift apart. A field an answer does not
declare is refused when the answer is built (`extra="forbid"`), not sent undocumented.
Field descriptions marked *Isthmus* are extensions of Confluent's Kafka REST v3 shapes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal

from django.http import JsonResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from replication.core import link_configs
from replication.models import ApprovalRequest as ApprovalRequestModel
from replication.models import (
    ClusterLink,
    GroupOffsetSync,
    MergeFlow,
    MirrorTopic,
    SchemaSubjectSync,
    Verification,
)

REF = "#/components/schemas/{model}"


def one_of(values: Iterable[str]) -> Any:
    """A Literal of these values, for a field that takes one of a model's choices. (Made at run
    time, so mypy cannot read it: each field typed so says `type: ignore[valid-type]`.)"""
    return Literal[tuple(values)]


class Shape(BaseModel):
    # Every field of an answer is always sent, so every field is required in its schema.
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def respond(shape: BaseModel, status: int = 200) -> JsonResponse:
    return JsonResponse(shape.model_dump(mode="json"), status=status)


Url = Annotated[str, Field(description="Its URL.", json_schema_extra={"format": "uri"})]
NullableCount = Annotated[int | None, Field(description="null on success, else the HTTP status.")]


# Common parts. ------------------------------------------------------------------------------


class Error(Shape):
    """The Kafka REST v3 error envelope."""

    error_code: int = Field(description="The HTTP status times 100 plus a number, e.g. 40401.")
    message: str = Field(description="What was wrong, and what to do about it.")


class ResourceMetadata(Shape):
    """Where this object lives."""

    self: Url


class ResourceCollectionMetadata(Shape):
    """Where this list lives."""

    self: Url
    next: None = Field(None, description="Always null: every list is answered whole.")


class Relationship(Shape):
    """A related resource."""

    related: Url


class ConfigNameValue(Shape):
    """One config, as a name and a string value."""

    name: str
    value: str


class OpenApiDocument(BaseModel):
    """An OpenAPI 3.1 document."""

    model_config = ConfigDict(extra="allow")
    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]


# Clusters. ----------------------------------------------------------------------------------


class ClusterRelated(Shape):
    """Related resources."""

    related: Url = Field(description="The cluster's links (as a URL).")


class KafkaCluster(Shape):
    """A registered cluster. The relationships Confluent's model requires point where Kafka
    REST serves them; Isthmus serves only `links` (its own extension) of them."""

    kind: Literal["KafkaCluster"] = "KafkaCluster"
    metadata: ResourceMetadata
    cluster_id: str = Field(description="The Kafka cluster id.")
    name: str = Field(description="*Isthmus*: the name the cluster was registered under.")
    links: ClusterRelated
    acls: Relationship
    brokers: Relationship
    broker_configs: Relationship
    consumer_groups: Relationship
    topics: Relationship
    partition_reassignments: Relationship


class KafkaClusterList(Shape):
    """The registered clusters."""

    kind: Literal["KafkaClusterList"] = "KafkaClusterList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaCluster]


# Topics, consumer groups and ACLs (Kafka REST v3's read paths). --------------------------------


class KafkaTopic(Shape):
    """A topic of the cluster (Kafka REST's TopicData)."""

    kind: Literal["KafkaTopic"] = "KafkaTopic"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    is_internal: bool
    replication_factor: int
    partitions_count: int
    partitions: Relationship
    configs: Relationship
    partition_reassignments: Relationship
    is_mirror: bool = Field(description="*Isthmus*: a mirror topic of one of its links.")


class KafkaTopicList(Shape):
    kind: Literal["KafkaTopicList"] = "KafkaTopicList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaTopic]


class KafkaPartition(Shape):
    """A partition of a topic (Kafka REST's PartitionData)."""

    kind: Literal["KafkaPartition"] = "KafkaPartition"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    partition_id: int
    leader: Relationship = Field(description="Its leader's replica (its replicas, without one).")
    replicas: Relationship
    reassignment: Relationship
    leader_id: int | None = Field(description="*Isthmus*: the leader's broker id.")
    replica_ids: list[int] = Field(description="*Isthmus*: the replicas' broker ids.")
    isr_ids: list[int] = Field(description="*Isthmus*: the in-sync replicas' broker ids.")


class KafkaPartitionList(Shape):
    kind: Literal["KafkaPartitionList"] = "KafkaPartitionList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaPartition]


class KafkaReplica(Shape):
    """A replica of a partition (Kafka REST's ReplicaData): what `topic describe` prints."""

    kind: Literal["KafkaReplica"] = "KafkaReplica"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Relationship


class KafkaReplicaList(Shape):
    kind: Literal["KafkaReplicaList"] = "KafkaReplicaList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaReplica]


class ConfigSynonym(Shape):
    name: str
    value: str | None
    source: str


class KafkaTopicConfig(Shape):
    """A config of a topic, set or not (Kafka REST's TopicConfigData)."""

    kind: Literal["KafkaTopicConfig"] = "KafkaTopicConfig"
    metadata: ResourceMetadata
    cluster_id: str
    topic_name: str
    name: str
    value: str | None = Field(description="null for a sensitive config.")
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str
    synonyms: list[ConfigSynonym]


class KafkaTopicConfigList(Shape):
    kind: Literal["KafkaTopicConfigList"] = "KafkaTopicConfigList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaTopicConfig]


class KafkaConsumerGroup(Shape):
    """A consumer group (Kafka REST's ConsumerGroupData)."""

    kind: Literal["KafkaConsumerGroup"] = "KafkaConsumerGroup"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    is_simple: bool
    partition_assignor: str
    state: str
    coordinator: Relationship
    consumer: Relationship = Field(description="Its consumers (the SDKs' name for it).")
    consumers: Relationship = Field(description="Its consumers (Kafka REST's name for it).")
    lag_summary: Relationship


class KafkaConsumerGroupList(Shape):
    kind: Literal["KafkaConsumerGroupList"] = "KafkaConsumerGroupList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaConsumerGroup]


class KafkaConsumer(Shape):
    """A member of a consumer group (Kafka REST's ConsumerData)."""

    kind: Literal["KafkaConsumer"] = "KafkaConsumer"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    instance_id: str | None
    client_id: str
    assignments: Relationship


class KafkaConsumerList(Shape):
    kind: Literal["KafkaConsumerList"] = "KafkaConsumerList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaConsumer]


class KafkaConsumerLag(Shape):
    """A group's lag on one partition (Kafka REST's ConsumerLagData)."""

    kind: Literal["KafkaConsumerLag"] = "KafkaConsumerLag"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    topic_name: str
    partition_id: int
    current_offset: int
    log_end_offset: int
    lag: int
    consumer_id: str
    instance_id: str | None
    client_id: str


class KafkaConsumerLagList(Shape):
    kind: Literal["KafkaConsumerLagList"] = "KafkaConsumerLagList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaConsumerLag]


class KafkaConsumerGroupLagSummary(Shape):
    """A group's largest and total lag (Kafka REST's ConsumerGroupLagSummaryData)."""

    kind: Literal["KafkaConsumerGroupLagSummary"] = "KafkaConsumerGroupLagSummary"
    metadata: ResourceMetadata
    cluster_id: str
    consumer_group_id: str
    max_lag_consumer_id: str
    max_lag_instance_id: str | None
    max_lag_client_id: str
    max_lag_topic_name: str
    max_lag_partition_id: int
    max_lag: int
    total_lag: int
    max_lag_consumer: Relationship
    max_lag_partition: Relationship


class KafkaAcl(Shape):
    """One ACL (Kafka REST's AclData)."""

    kind: Literal["KafkaAcl"] = "KafkaAcl"
    metadata: ResourceMetadata
    cluster_id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


class KafkaAclList(Shape):
    kind: Literal["KafkaAclList"] = "KafkaAclList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaAcl]


# Links. -------------------------------------------------------------------------------------


class CategoryCount(Shape):
    """The number of mirror partitions in a state category."""

    state_category: Literal["ACTIVE", "IN_ERROR", "NOT_APPLICABLE", "PAUSED", "PENDING"]
    count: int


class LinkStream(Shape):
    """*Isthmus*: the link's stream, which copies its mirrors."""

    state: str = Field(description="STOPPED, STARTING, RUNNING, RESTARTING, FAILED or UNKNOWN.")
    records_per_sec: float
    bytes_per_sec: float
    failures: int = Field(description="Failures in a row; restarts back off, then FAILED.")
    error: str = Field(description="The stream's last error, if any.")


class LinkTaskError(Shape):
    """Why a link task is in error."""

    error_code: str
    error_message: str


class LinkTask(Shape):
    """One task of a link (as Confluent reports them)."""

    task_name: str
    state: str
    errors: list[LinkTaskError]


class KafkaLinkData(Shape):
    """A cluster link into this (the destination) cluster."""

    kind: Literal["KafkaLinkData"] = "KafkaLinkData"
    metadata: ResourceMetadata
    source_cluster_id: str | None = Field(description="The id of the cluster the link copies from.")
    destination_cluster_id: None = Field(
        None, description="Always null: Isthmus links are destination-initiated."
    )
    remote_cluster_id: None = Field(
        None,
        description="Always null: a bidirectional link (link.mode=BIDIRECTIONAL) is one each "
        "way, each naming the other cluster as its source_cluster_id.",
    )
    link_name: str
    link_id: str = Field(
        description="The link's UUID, in its canonical form (deprecated in Confluent's API; "
        "cluster_link_id is the same UUID as Kafka prints ids).",
        json_schema_extra={"format": "uuid"},
    )
    cluster_link_id: str = Field(description="The link's UUID in Kafka's URL-safe base64 form.")
    topic_names: list[str] = Field(description="The link's mirror topics.")
    link_state: one_of(ClusterLink.State.values)  # type: ignore[valid-type]
    link_error: str = Field(description="NO_ERROR, or why the link is UNAVAILABLE or FAILED.")
    link_error_message: str | None
    tasks: list[LinkTask] = Field(
        [], description="Always empty: Isthmus reports no per-task breakdown yet."
    )
    category_counts: list[CategoryCount] = Field(
        description="Mirror partitions by state category; categories with none are left out."
    )
    stream: LinkStream


class KafkaLinkDataList(Shape):
    """Cluster links."""

    kind: Literal["KafkaLinkDataList"] = "KafkaLinkDataList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaLinkData]


class KafkaLinkConfigData(Shape):
    """One link config, set or defaulted."""

    kind: Literal["KafkaLinkConfigData"] = "KafkaLinkConfigData"
    metadata: ResourceMetadata
    cluster_id: str = Field(description="The destination cluster's id.")
    link_name: str
    name: str
    value: str = Field(description="The value; empty for a sensitive config.")
    is_default: bool = Field(description="Not set on the link: the default applies.")
    is_read_only: bool = Field(description="Shown, never changed (or set only at creation).")
    read_only: bool = Field(description="The same as is_read_only, as Confluent Platform names it.")
    is_sensitive: bool = Field(description="A secret: stored encrypted, never shown.")
    sensitive: bool = Field(description="The same as is_sensitive, as Confluent Platform names it.")
    source: Literal["DYNAMIC_CLUSTER_LINK_CONFIG", "DEFAULT_CONFIG"]
    synonyms: list[str] = Field([], description="Always empty.")


class KafkaLinkConfigDataList(Shape):
    """A link's configs."""

    kind: Literal["KafkaLinkConfigDataList"] = "KafkaLinkConfigDataList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaLinkConfigData]


# Mirror topics. -----------------------------------------------------------------------------

_NOW = "*Isthmus*: read from the clusters now; -1 if it could not be read."


class MirrorLag(Shape):
    """One partition's lag."""

    partition: int
    lag: int = Field(
        description="Source high watermark minus the mirror's log end offset; -1 unknown."
    )
    last_source_fetch_offset: int = Field(
        description="The source high watermark at the last fetch; -1 until the stream reports it."
    )
    dest_log_end_offset: int = Field(description=f"The mirror partition's log end offset. {_NOW}")
    source_high_watermark: int = Field(description=f"The source partition's high watermark. {_NOW}")
    time_since_last_fetch_ms: int = Field(
        description="*Isthmus*: milliseconds since the last fetch from the source; -1 unknown "
        "(as `kafka-mirrors --describe` prints it)."
    )
    offset_mode: Literal["IDENTICAL", "TRANSLATED"] = Field(
        description="*Isthmus*: IDENTICAL while the mirror's offsets equal the source's; "
        "TRANSLATED once they differ (the mirror started above offset 0, or compaction, "
        "transactions or retention left gaps), with a durable translation."
    )
    verified_offset: int = Field(
        -1,
        description="*Isthmus*: the source offset up to which the background verification "
        "compared every record of the partition with the source's; -1 before its first round.",
    )


class MirrorStateTransitionError(Shape):
    """Why the mirror is in its state."""

    error_code: str
    error_message: str


class KafkaMirrorData(Shape):
    """A mirror topic: a read-only copy of a source topic, kept up to date by its link."""

    kind: Literal["KafkaMirrorData"] = "KafkaMirrorData"
    metadata: ResourceMetadata
    link_name: str
    link_id: str = Field(
        description="*Isthmus*: the link's UUID.", json_schema_extra={"format": "uuid"}
    )
    mirror_topic_name: str
    source_topic_name: str
    source_topic_id: str = Field(
        description="*Isthmus*: the source topic's id when the mirror was made; a source topic "
        "recreated under the same name fails the mirror (SOURCE_TOPIC_ID_CHANGED)."
    )
    num_partitions: int
    mirror_lags: list[MirrorLag] = Field(description="Per partition, read from both clusters now.")
    mirror_status: one_of(MirrorTopic.State.values)  # type: ignore[valid-type]
    mirror_topic_error: one_of(MirrorTopic.Error.values)  # type: ignore[valid-type]
    state_time_ms: int = Field(
        description="When the mirror entered its state (epoch milliseconds)."
    )
    mirror_state_transition_errors: list[MirrorStateTransitionError]
    read_only_enforced: bool = Field(
        description="*Isthmus*: whether the destination enforces the mirror's read-only ACLs; "
        "false when it runs without an authorizer, so clients could write to the mirror."
    )
    status_errors: list[str] = Field(
        description="*Isthmus*: why offsets could not be read from a cluster just now (the lags "
        "then show -1); empty when both answered."
    )
    verified: str = Field(
        "",
        description="*Isthmus*: what the background verification found, in a sentence (up to "
        "which offset the mirror is identical to its source, and when it was checked).",
    )
    differing_records: int = Field(
        0, description="*Isthmus*: records any verification found differing from the source."
    )
    records_lost: str = Field(
        "",
        description="*Isthmus*: source records retention deleted before the mirror copied "
        "them (partitions and offsets), in words; empty when none were.",
    )
    differences: list[str] = Field(
        [], description="*Isthmus*: what differs, in words (the first 50 runs of records)."
    )


class VerifiedRange(Shape):
    """*Isthmus*: one partition's range of source offsets in a verification."""

    partition: int
    first_offset: int
    end_offset: int = Field(description="The range ends before this source offset.")
    compared_upto: int = Field(description="Every record before this offset was compared.")


class MirrorVerification(Shape):
    """*Isthmus*: a mirror topic compared with its source, record by record: partition,
    offset (through the offset translation), key, value, headers and timestamp."""

    kind: Literal["MirrorVerification"] = "MirrorVerification"
    metadata: ResourceMetadata
    verification_id: str
    link_name: str
    mirror_topic_name: str
    state: one_of(Verification.State.values) = Field(  # type: ignore[valid-type]
        description="RUNNING, then IDENTICAL, DIFFERENT or FAILED."
    )
    requested_by: str
    from_offset: int | None = Field(description="As asked; null: the source's log start.")
    to_offset: int | None = Field(description="As asked; null: what the mirror had copied.")
    partitions: list[VerifiedRange]
    total: int = Field(description="Source offsets to compare, over all partitions.")
    compared: int = Field(description="Source offsets compared so far (the progress).")
    identical_records: int
    differing_records: int
    differences: list[str] = Field(description="What differs, in words (the first 50 runs).")
    notes: list[str] = Field(description="What could not be compared, and why.")
    outcome: str = Field(description="The verification in a sentence.")
    error_message: str | None
    started_at: str
    finished_at: str | None


class MirrorVerificationList(Shape):
    """*Isthmus*: verifications of mirror topics."""

    kind: Literal["MirrorVerificationList"] = "MirrorVerificationList"
    metadata: ResourceCollectionMetadata
    data: list[MirrorVerification]


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


class SchemaSubjectData(Shape):
    """*Isthmus*: one subject a link syncs to its destination's schema registry."""

    subject: str
    state: one_of(SchemaSubjectSync.State.values) = Field(  # type: ignore[valid-type]
        description="IN_STEP: every source version is there under its id and version; "
        "CONFLICT: the destination gives an id to another schema (never overwritten); FAILED: "
        "a registry refused; PROMOTED: its topic was promoted, the subject is writable on the "
        "destination and no longer synced."
    )
    versions: list[int] = Field(description="The versions in step on both registries.")
    compatibility: str | None = Field(
        description="The compatibility level new versions are checked against on the source "
        "(the subject's own or its registry's), given to the subject on the destination; null "
        "until a run has read it."
    )
    message: str | None
    synced_at: str
    changed_at: str


class SchemaSyncData(Shape):
    """*Isthmus*: a link's schema sync (link configs schema.sync.enable, schema.sync.ms,
    schema.subjects, schema.context, schema.source.context) and each subject's state."""

    kind: Literal["SchemaSyncData"] = "SchemaSyncData"
    metadata: ResourceMetadata
    link_name: str
    enabled: bool
    interval_ms: int
    subject_filters: str | None = Field(
        description="Names and prefixes (ending in *); null: the subjects of the link's mirrors."
    )
    context: str | None = Field(description="The destination registry's context synced into.")
    source_context: str | None = Field(description="The source registry's context synced from.")
    synced_at: str | None = Field(description="When the last whole run started.")
    error_message: str | None = Field(description="What stops the sync, if anything does.")
    subjects: list[SchemaSubjectData]


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


class KafkaMirrorDataList(Shape):
    """Mirror topics."""

    kind: Literal["KafkaMirrorDataList"] = "KafkaMirrorDataList"
    metadata: ResourceCollectionMetadata
    data: list[KafkaMirrorData]


class AlterMirrorsData(Shape):
    """One mirror topic's outcome."""

    kind: Literal["AlterMirrorsData"] = "AlterMirrorsData"
    metadata: ResourceMetadata = Field(description="The mirror topic's URL.")
    mirror_topic_name: str
    error_code: NullableCount
    error_message: str | None = Field(description="null on success, else why.")
    mirror_lags: list[MirrorLag] = Field(
        description="Each partition's lag after the action, read from both clusters; empty for "
        "a topic the action was refused for."
    )


class AlterMirrorsResult(Shape):
    """The outcome of a mirror action, per topic: one topic's refusal leaves the others be."""

    kind: Literal["KafkaAlterMirrorsDataList"] = "KafkaAlterMirrorsDataList"
    metadata: ResourceCollectionMetadata
    data: list[AlterMirrorsData]


# Promote, failover and approval requests. ---------------------------------------------------


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


# Request bodies. ----------------------------------------------------------------------------


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PromoteSubjectsRequest(Body):
    """*Isthmus*: synced schema subjects to make writable on the destination."""

    subjects: list[str] = Field(description="Subjects the link syncs (its schemas shows them).")
    reason: str | None = Field(default=None, description="Why: approvers and the audit read it.")


_CONFLUENTS_BIDIRECTIONAL = (
    "Refused: Confluent's way to make a bidirectional link; here set link.mode=BIDIRECTIONAL "
    "and give the other registered cluster's id as source_cluster_id."
)


class CreateLinkRequest(Body):
    """A destination-initiated link; its name is the link_name query parameter."""

    source_cluster_id: str | None = Field(
        None,
        description="The source's cluster id: checked against the cluster bootstrap.servers "
        "reaches; required with validate_link=false.",
    )
    configs: list[ConfigNameValue] = Field(
        description="Link configs; bootstrap.servers is required. Valid names: "
        + ", ".join(link_configs.KEYS)
        + "."
    )
    destination_cluster_id: str | None = Field(
        None, description="Refused: only for source-initiated links."
    )
    remote_cluster_id: str | None = Field(None, description=_CONFLUENTS_BIDIRECTIONAL)
    cluster_link_id: str | None = Field(None, description=_CONFLUENTS_BIDIRECTIONAL)


class UpdateLinkConfigRequest(Body):
    """A new value."""

    value: str


class AlterConfigBatchEntry(Body):
    """One config to set (with a value) or to reset (operation DELETE)."""

    name: str
    value: str | None = None
    operation: Literal["SET", "DELETE"] = "SET"


class AlterLinkConfigBatchRequest(Body):
    """Configs to set and to reset, all or nothing."""

    data: list[AlterConfigBatchEntry]


class CreateMirrorTopicRequest(Body):
    """A mirror of a source topic."""

    source_topic_name: str
    mirror_topic_name: str | None = Field(
        None,
        description="If given, must be the source topic name with the link's cluster.link.prefix.",
    )
    replication_factor: int | None = Field(
        None, ge=1, description="Default: the destination cluster's default."
    )
    configs: list[ConfigNameValue] = Field(
        [],
        description="Topic config overrides; strictly mirrored configs (e.g. cleanup.policy) "
        "are refused.",
    )


class AlterMirrorsRequest(Body):
    """The mirror topics to act on: a list of names or a regex (one of the two)."""

    mirror_topic_names: list[str] | None = Field(None, description="The mirror topics, by name.")
    mirror_topic_name_pattern: str | None = Field(
        None,
        description="A regex (RE2 syntax: no look-arounds or back-references) that the whole "
        "name of each mirror topic of the link must match.",
    )


class StopMirrorsRequest(AlterMirrorsRequest):
    """The mirror topics to promote or fail over, and why."""

    reason: str = Field(
        "",
        description="*Isthmus*: why; required when the action waits for approval, and for "
        "break_glass.",
    )
    break_glass: bool = Field(
        False,
        description="*Isthmus*: an admin's failover that runs at once whatever the link's "
        "approval policy; flagged everywhere.",
    )


class VerifyMirrorsRequest(AlterMirrorsRequest):
    """*Isthmus*: the mirror topics to compare with their sources, and the range of source
    offsets (the same in every partition)."""

    from_offset: int | None = Field(None, description="Default: each partition's log start.")
    to_offset: int | None = Field(
        None, description="Up to, not including. Default: what the mirror has copied."
    )


class CreateMergeFlowRequest(Body):
    """*Isthmus*: a merge flow to create over the link."""

    source_topic_name: str
    destination_topic_name: str | None = Field(
        None, description="Default: the source topic's name. Made when it does not exist."
    )
    flow_name: str | None = Field(None, description="Default: <link name>.<source topic>.")
    partition_mapping: one_of(MergeFlow.Mapping.values) | None = Field(  # type: ignore[valid-type]
        None, description="Default: one-to-one when the partition counts are equal, else by-key."
    )


class ImportReplicatorRequest(Body):
    """*Isthmus*: a Replicator connector's configuration, as pasted: Kafka Connect's JSON (with
    or without its "config" wrapper) or a properties file."""

    configuration: str


class RejectRequest(Body):
    """*Isthmus*: why the request is rejected."""

    reason: str = ""


ANSWERS = (
    Error,
    OpenApiDocument,
    KafkaCluster,
    KafkaClusterList,
    KafkaLinkData,
    KafkaLinkDataList,
    KafkaLinkConfigData,
    KafkaLinkConfigDataList,
    SchemaSyncData,
    KafkaMirrorData,
    KafkaMirrorDataList,
    MirrorVerification,
    MirrorVerificationList,
    MergeFlowData,
    MergeFlowDataList,
    ReplicatorImport,
    AlterMirrorsResult,
    StopMirrorsResult,
    ApprovalRequest,
    ApprovalRequestList,
    KafkaTopic,
    KafkaTopicList,
    KafkaPartition,
    KafkaPartitionList,
    KafkaReplicaList,
    KafkaTopicConfig,
    KafkaTopicConfigList,
    KafkaConsumerGroup,
    KafkaConsumerGroupList,
    KafkaConsumerList,
    KafkaConsumerLag,
    KafkaConsumerLagList,
    KafkaConsumerGroupLagSummary,
    KafkaAclList,
)
BODIES = (
    CreateLinkRequest,
    UpdateLinkConfigRequest,
    AlterLinkConfigBatchRequest,
    CreateMirrorTopicRequest,
    AlterMirrorsRequest,
    StopMirrorsRequest,
    VerifyMirrorsRequest,
    CreateMergeFlowRequest,
    ImportReplicatorRequest,
    PromoteSubjectsRequest,
    RejectRequest,
)


def components() -> dict[str, dict]:
    """The JSON Schema of every answer and body, by model name, for the OpenAPI document."""
    _, schemas = models_json_schema(
        [(m, "serialization") for m in ANSWERS] + [(m, "validation") for m in BODIES],
        ref_template=REF,
    )
    return schemas["$defs"]
