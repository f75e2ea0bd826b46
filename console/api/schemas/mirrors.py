"""The answers about mirror topics: a mirror with each partition's lag, and the outcome of
a mirror action per topic.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.api.schemas.common import (
    NullableCount,
    ResourceCollectionMetadata,
    ResourceMetadata,
    Shape,
    one_of,
)
from replication.models import (
    MirrorTopic,
)

_NOW = "*Isthmus*: read from the clusters now; -1 if it could not be read."


class MirrorLag(Shape):
    """One partition's lag."""

    partition: int
    lag: int = Field(
        description="Source high watermark minus the mirror's log end offset; -1 unknown."
    )
    lag_ms: int = Field(
        -1,
        description="*Isthmus*: the lag in time, the partition's recovery point: the age in "
        "milliseconds of the oldest source record not yet in the mirror, from its timestamp; 0 "
        "when the mirror holds every record; -1 unknown (not read yet: the lag sample reads it "
        "every 10 s; or the record's timestamp is missing or more than a minute ahead).",
    )
    last_source_fetch_offset: int = Field(
        description="The source high watermark at the stream's last fetch. A stream just "
        "resumed or restarted has not fetched yet: the last fetch known is kept over the pause "
        "(a fact already seen, where the mirror's end would only be a guess for a translated "
        "mirror); -1 when none is known."
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


class MirrorAction(Shape):
    """*Isthmus*: one action on a mirror topic, and whether it can run now."""

    action: str = Field(
        description="pause, resume, promote, failover, reverse-and-start-mirror, "
        "reverse-and-pause-mirror, truncate-and-restore (fail back: run on the link's other "
        "half, it makes this stopped topic's old source its mirror again) or verify."
    )
    available: bool = Field(
        description="Whether its state allows it now (its dry run may still refuse it: a "
        "promote's lag, a cluster not answering)."
    )
    reason: str = Field(description="Why it cannot run now, and what to do; empty when it can.")


class MirroredBy(Shape):
    """*Isthmus*: the other cluster's mirror of a stopped topic, which makes it the primary."""

    cluster_id: str
    cluster_name: str
    link_name: str
    mirror_topic_name: str
    mirror_status: one_of(MirrorTopic.State.values)  # type: ignore[valid-type]


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
    max_lag_ms: int = Field(
        -1,
        description="*Isthmus*: the largest lag_ms of its partitions (-1: none known): the "
        "mirror's recovery point.",
    )
    rpo_target_seconds: int | None = Field(
        None, description="*Isthmus*: its link's RPO target in seconds; null: none."
    )
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
    actions: list[MirrorAction] = Field(
        [],
        description="*Isthmus*: each action on the mirror, whether it can run now, and why "
        "not (as the console offers them and `kafka-mirrors --describe` prints them).",
    )
    mirrored_by: MirroredBy | None = Field(
        None,
        description="*Isthmus*: for a stopped topic that is the primary (after a reverse or a "
        "fail back), the other cluster's mirror of it; null otherwise.",
    )


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
