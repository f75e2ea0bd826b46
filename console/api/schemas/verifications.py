"""The answers about verifications: a mirror topic compared with its source record by
record, each partition's range and what was found.
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
    Verification,
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
