"""The request bodies the JSON API takes (`Body`: a field not declared is refused), from
creating a link to rejecting an approval request.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from console.api.schemas.common import (
    ConfigNameValue,
    one_of,
)
from replication.core import link_configs
from replication.models import (
    MergeFlow,
)


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PromoteSubjectsRequest(Body):
    """*Isthmus*: synced schema subjects to make writable on the destination."""

    subjects: list[str] = Field(description="Subjects the link syncs (its schemas shows them).")
    reason: str | None = Field(default=None, description="Why: approvers and the audit read it.")


_REMOTE = (
    "With link.mode=BIDIRECTIONAL: the other registered cluster (as source_cluster_id); "
    "refused with any other link.mode."
)
_LINK_ID = (
    "Confluent's second create of a bidirectional link: one of the existing link's halves' "
    "cluster_link_id (Isthmus made both at the first create)."
)


class CreateLinkRequest(Body):
    """A link into this cluster, or a source-initiated link's source half (link.mode=SOURCE,
    created on its source); its name is the link_name query parameter."""

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
        None,
        description="A source-initiated link's source half (link.mode=SOURCE, created on the "
        "source): its destination, a registered cluster where its destination half "
        "(connection.mode=INBOUND) was made first.",
    )
    remote_cluster_id: str | None = Field(None, description=_REMOTE)
    cluster_link_id: str | None = Field(None, description=_LINK_ID)


class UpdateLinkConfigRequest(Body):
    """A new value."""

    value: str


class SetRpoTargetRequest(Body):
    """*Isthmus*: the link's recovery point objective."""

    rpo_target_seconds: int | None = Field(
        description="How far behind in time (the age of the oldest source record not yet "
        "mirrored) its mirrors may fall, in whole seconds from 1 to a year; null for none."
    )


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
    gateway: str = Field(
        "",
        description="*Isthmus*: a gateway whose clients follow the cutover: once every topic "
        "is writable on its new cluster (a truncate-and-restore: as it starts), the gateway "
        "routes all its clients there. Needs the right to manage gateways (admins).",
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
