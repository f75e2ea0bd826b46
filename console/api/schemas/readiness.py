"""*Isthmus*: a link's DR readiness (replication/overview/readiness.py) and its drills."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.api.schemas.common import ResourceMetadata, Shape


class PreconditionData(Shape):
    """A promote precondition: whether it holds now, and why (or why not)."""

    met: bool
    why: str


class MirrorReadinessData(Shape):
    """A mirror's readiness, from its last lag reading and the syncers' last word."""

    mirror_topic_name: str
    lag_ms: int | None = Field(
        description="Its partition furthest behind, in time: the age of the oldest source record "
        "not yet mirrored (0: caught up; null: unknown)."
    )
    records_behind: int | None = Field(
        description="Source records not yet mirrored (null: unknown)."
    )
    over_rpo_target: bool
    last_verified_at: str | None = Field(
        description="When it was last compared with its source (null: never)."
    )
    differing_records: int = Field(description="Records any verification found differing.")
    verification: str = Field(description="What the comparisons found, in words.")
    caught_up: PreconditionData
    consumer_groups_synced: PreconditionData
    schemas_synced: PreconditionData
    ready: bool = Field(description="Every precondition holds: a promote could go ahead.")


class DrillStepData(Shape):
    name: str
    seconds: float
    words: str = Field(description="What it saw, or what stopped it.")
    passed: bool


class DrillData(Shape):
    """A drill of the link: a canary topic of its own failed over and back."""

    id: int
    outcome: Literal["RUNNING", "PASSED", "FAILED", "REFUSED"]
    started_by: str
    canary: str | None = Field(description="The drill's own topic on the link's source.")
    started_at: str
    finished_at: str | None
    seconds: float | None = Field(description="How long the whole drill took.")
    failover_seconds: float | None
    failback_seconds: float | None
    way_back: Literal["restore", "delete"] | None = Field(
        description="restore: truncate-and-restore, then reverse (a bidirectional link); "
        "delete: the promoted canary and its source deleted."
    )
    words: str | None = Field(description="What stopped it, or why it was refused.")
    cleanup: str | None = Field(description="What cleaning up could not remove (null: nothing).")
    steps: list[DrillStepData]


class DrillScheduleData(Shape):
    enabled: bool
    every_hours: int | None
    next_due: str | None


class LinkReadinessData(Shape):
    """*Isthmus*: the link's RPO now against its target, each mirror's promote preconditions
    and last verification, and its drills."""

    kind: Literal["LinkReadinessData"] = "LinkReadinessData"
    metadata: ResourceMetadata
    link_name: str
    link_state: str
    rpo_target_seconds: int | None
    rpo_lag_ms: int | None = Field(description="Its mirrors' largest lag in time (null: unknown).")
    rpo_breached_since: str | None
    mirrors: list[MirrorReadinessData]
    last_drill: DrillData | None = Field(description="The last drill that passed or failed.")
    running_drill: DrillData | None
    drill_schedule: DrillScheduleData
    drills: list[DrillData] = Field(description="The latest drills, newest first.")
