"""The answers about cluster links: a link (its state, stream and mirror partitions by state
category), its configs, and its schema sync with each subject's state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from console.api.schemas.common import (
    ResourceCollectionMetadata,
    ResourceMetadata,
    Shape,
    one_of,
)
from replication.models import (
    ClusterLink,
    SchemaSubjectSync,
)


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


class LinkHalf(Shape):
    """*Isthmus*: the other half of a bidirectional link, into this link's source cluster."""

    cluster_id: str = Field(description="The cluster it copies into: this link's source.")
    cluster_name: str
    link_id: str = Field(json_schema_extra={"format": "uuid"})
    link_state: one_of(ClusterLink.State.values)  # type: ignore[valid-type]
    engine: str = Field(
        "",
        description="Isthmus: the engine that copies the link, that of the network zone of the "
        "cluster that opens its connections (a source-initiated link's source); empty for the "
        "console's own.",
    )
    topic_names: list[str] = Field(description="Its mirror topics.")
    flow_names: list[str] = Field(description="Its merge flows.")


class KafkaLinkData(Shape):
    """A cluster link into this (the destination) cluster."""

    kind: Literal["KafkaLinkData"] = "KafkaLinkData"
    metadata: ResourceMetadata
    source_cluster_id: str | None = Field(description="The id of the cluster the link copies from.")
    destination_cluster_id: str | None = Field(
        None,
        description="Null for a link into this cluster. Listed on its source, a "
        "source-initiated link's source half (link.mode=SOURCE) names its destination here, "
        "with source_cluster_id null: Isthmus keeps the one link, on its destination, and shows "
        "it on both clusters.",
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
    engine: str = Field(
        "",
        description="Isthmus: the engine that copies the link, that of the network zone of the "
        "cluster that opens its connections (a source-initiated link's source); empty for the "
        "console's own.",
    )
    link_error: str = Field(description="NO_ERROR, or why the link is UNAVAILABLE or FAILED.")
    link_error_message: str | None
    tasks: list[LinkTask] = Field(
        [], description="Always empty: Isthmus reports no per-task breakdown yet."
    )
    category_counts: list[CategoryCount] = Field(
        description="Mirror partitions by state category; categories with none are left out."
    )
    stream: LinkStream
    flow_names: list[str] = Field([], description="*Isthmus*: the link's merge flows.")
    rpo_target_seconds: int | None = Field(
        None,
        description="*Isthmus*: how far behind in time its mirrors may fall (the age of the "
        "oldest source record not yet mirrored, each mirror's max_lag_ms); null: no target. "
        "Set with PUT …/rpo-target.",
    )
    rpo_breached_since: datetime | None = Field(
        None,
        description="*Isthmus*: since when a mirror has been further behind than the target "
        "(as the lag sample every 10 s found); null while none is.",
    )
    other_half: LinkHalf | None = Field(
        None,
        description="*Isthmus*: a bidirectional link is one object with a half on each "
        "cluster: the other half, which DELETE of the link deletes too; null for a one-way "
        "link (or one whose other half is gone).",
    )


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
