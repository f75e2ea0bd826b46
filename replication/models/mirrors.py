"""Mirror topics and the shapes of their JSON fields."""

from __future__ import annotations

from typing import Any, TypedDict

from django.db import models
from django.utils import timezone

from replication.models.clusters import KafkaCluster
from replication.models.links import ClusterLink

# --- the shapes of MirrorTopic's JSON fields ----------------------------------------------------

PartitionValues = dict[str, int]  # partition (a JSON key: text) -> an offset or a count
RecordsLost = dict[str, list[int]]  # partition -> [first, end) in source offsets


class PendingStop(TypedDict, total=False):
    """A cutover under way, while its steps run: what the next one needs. Every kind has
    `kind`, `actor`, `note`, `requested_at`. A promote or failover (promote.py) and a reverse
    (reverse.py) add `prior_state`, and `generation` once the mirror left its link's mirror set;
    a reverse, `fence`. A truncate-and-restore (restore.py): `point`, `quarantine`,
    `failed_over`, then what its set-up step found and its copy back did."""

    kind: str
    actor: str
    note: str
    requested_at: str  # ISO 8601
    prior_state: str  # where it goes back to if the stop cannot finish
    generation: int  # the link's mirror set without it
    fence: PartitionValues  # a reverse: where each source partition was fenced
    point: PartitionValues  # a restore: the offset each partition is truncated to
    quarantine: str  # the topic the divergent records are set aside in
    failed_over: int  # the promoted copy's mirror (pk)
    quarantined: PartitionValues  # records set aside
    heads: PartitionValues
    restored_end: PartitionValues
    configs: dict[str, str]  # the topic's, to make it anew with
    bytes_within: int
    to_copy: PartitionValues


class StopReport(TypedDict, total=False):
    """How a STOPPED (or restored) mirror stopped: who asked, when, why, what was left."""

    kind: str
    actor: str
    note: str
    requested_at: str | None
    lag: PartitionValues  # records left behind
    consumer_offsets: str  # a promote's last offset sync
    reversed: str  # a reverse: what mirrors it now
    # A truncate-and-restore (restore.py):
    offset_truncated_to: PartitionValues
    messages_truncated: PartitionValues
    quarantine: str
    records_kept: PartitionValues
    bytes_copied_within_cluster: int
    records_to_copy: PartitionValues
    quarantine_deleted_at: str  # ISO 8601
    quarantine_deleted_by: str


# A partition the background verification compared: its records from source offset "from" to
# "source" (identical, or in `differences`); the next compared are at "source" and "mirror".
VerifiedPartition = TypedDict("VerifiedPartition", {"from": int, "source": int, "mirror": int})


class VerificationState(TypedDict, total=False):
    """How far the background verification (verification_sweep.py) got ({} before its first
    round)."""

    at: float  # time.time() of its last round
    partitions: dict[str, VerifiedPartition]


# A difference found, as `record_matching.Difference.as_json` writes it (and `of_json` reads):
# [partition, kind, source offset, mirror offset, fields, count].
DifferenceJson = list[Any]


class MirrorTopic(models.Model):
    """A read-only topic on the link's destination that copies one source topic."""

    class State(models.TextChoices):
        PENDING_MIRROR = "PENDING_MIRROR"
        ACTIVE = "ACTIVE"
        PAUSED = "PAUSED"
        LINK_PAUSED = "LINK_PAUSED"
        # a reverse: its source is fenced; it copies up to the fence, then stops and swaps
        PENDING_SYNCHRONIZE = "PENDING_SYNCHRONIZE"
        PENDING_STOPPED = "PENDING_STOPPED"
        # truncate-and-restore: its divergent records and the prefix it keeps are being copied
        # aside on its cluster, then the topic is made anew with the prefix (restore.py)
        PENDING_SETUP_FOR_RESTORE = "PENDING_SETUP_FOR_RESTORE"
        PENDING_RESTORE = "PENDING_RESTORE"
        STOPPED = "STOPPED"
        FAILED = "FAILED"
        SOURCE_UNAVAILABLE = "SOURCE_UNAVAILABLE"

    class Error(models.TextChoices):
        NO_ERROR = "NO_ERROR"
        SOURCE_TOPIC_MAY_BE_DELETED = "SOURCE_TOPIC_MAY_BE_DELETED"
        SOURCE_TOPIC_ID_CHANGED = "SOURCE_TOPIC_ID_CHANGED"
        SOURCE_PARTITIONS_DECREASED = "SOURCE_PARTITIONS_DECREASED"

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="mirrors")
    # The link's destination, kept here so a topic name is unique per destination cluster.
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    source_topic = models.CharField(max_length=249)
    mirror_topic = models.CharField(max_length=249)
    source_topic_id = models.CharField(max_length=64, blank=True)
    num_partitions = models.PositiveIntegerField(default=0)
    replication_factor = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=30, choices=State.choices, default=State.PENDING_MIRROR)
    state_time = models.DateTimeField(default=timezone.now)
    mirror_error = models.CharField(max_length=60, choices=Error.choices, default=Error.NO_ERROR)
    error_message = models.TextField(blank=True)
    paused = models.BooleanField(default=False, help_text="Paused by a user (survives link pause).")
    # Topic configs set on the mirror, beside those synced from its source.
    config_overrides: models.JSONField[dict[str, str], dict[str, str]] = models.JSONField(
        default=dict, blank=True
    )
    stop_offsets: models.JSONField[PartitionValues | None, PartitionValues | None] = (
        models.JSONField(
            null=True, blank=True, help_text="partition -> destination log end offset when stopped"
        )
    )
    # While a cutover's steps run (PENDING_STOPPED, PENDING_SYNCHRONIZE, a restore's states).
    pending_stop: models.JSONField[PendingStop | None, PendingStop | None] = models.JSONField(
        null=True, blank=True
    )
    # Once STOPPED (or restored): how it stopped.
    stop_report: models.JSONField[StopReport | None, StopReport | None] = models.JSONField(
        null=True, blank=True
    )
    # Why the last promote or failover could not finish; cleared by the next one.
    action_error = models.TextField(blank=True)
    read_only_enforced = models.BooleanField(default=True)
    source_missing_since = models.DateTimeField(null=True, blank=True)
    # Source records deleted (by retention) before the mirror copied them, found by the lag
    # readings: {partition: [first, end)} in source offsets. Kept: the mirror is no longer the
    # source's exact copy, whatever happens next.
    records_lost: models.JSONField[RecordsLost, RecordsLost] = models.JSONField(
        default=dict, blank=True
    )
    # The background verification (verification_sweep.py).
    verification: models.JSONField[VerificationState, VerificationState] = models.JSONField(
        default=dict, blank=True
    )
    # What any verification found differing from the source (folded), and how many records
    # that is; kept like records_lost.
    differences: models.JSONField[list[DifferenceJson], list[DifferenceJson]] = models.JSONField(
        default=list, blank=True
    )
    differing_records = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # Not a column: what the overview says is wrong with it (set by dashboard.py).
    trouble: str

    class Meta:
        ordering = ["mirror_topic"]
        constraints = [
            models.UniqueConstraint(
                fields=["destination", "mirror_topic"], name="mirror_topic_per_destination"
            )
        ]

    def __str__(self) -> str:
        return self.mirror_topic

    def pending(self) -> PendingStop:
        """What the cutover under way needs next (a mirror in one of its states has it)."""
        if self.pending_stop is None:
            raise ValueError(f"Mirror topic {self.mirror_topic} has no cutover under way.")
        return self.pending_stop
