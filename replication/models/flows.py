"""Merge flows and their checkpoints."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from replication.models.clusters import NAME_VALIDATOR, KafkaCluster
from replication.models.links import ClusterLink


class MergeFlow(models.Model):
    """A source topic copied over `link` into an ordinary, writable topic of the destination,
    of any name: the same (active-active), another (a rename), or one that other flows feed
    too (an aggregate). Offsets are not kept; each record carries its origin instead
    (spark_jobs/merging.py)."""

    class State(models.TextChoices):
        ACTIVE = "ACTIVE"
        PAUSED = "PAUSED"

    class Mapping(models.TextChoices):
        ONE_TO_ONE = "one-to-one"  # source partition p into destination partition p
        BY_KEY = "by-key"  # as Java's default partitioner would place the record's key

    flow_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200, validators=[NAME_VALIDATOR])
    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="flows")
    # The link's destination, kept here so a flow's name is unique per destination cluster.
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    source_topic = models.CharField(max_length=249)
    destination_topic = models.CharField(max_length=249)
    mapping = models.CharField(max_length=12, choices=Mapping.choices)
    state = models.CharField(max_length=12, choices=State.choices, default=State.ACTIVE)
    state_time = models.DateTimeField(default=timezone.now)
    created_topic = models.BooleanField(default=False, help_text="Isthmus made the topic.")
    created_at = models.DateTimeField(auto_now_add=True)
    # Copied in this many parts, each by a slot (spark_jobs/merging.py, PARTS); never changes.
    parts = models.PositiveSmallIntegerField(default=1)
    # The engine saw records of others between the flow's own in the destination topic
    # (flow_offsets.py: a place in the source then stands for no place there). Never unset.
    others_write = models.BooleanField(default=False)
    # The newest checkpoint kept per source partition: {"partition": [next, dest]}.
    checkpointed = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["destination", "name"], name="flow_name_per_cluster"),
            models.UniqueConstraint(
                fields=["link", "source_topic", "destination_topic"], name="flow_once_per_pair"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class FlowCheckpoint(models.Model):
    """A one-to-one flow's committed progress in one source partition, as the engine reported
    it: records of the source below `source_next` lie below `destination_next` in the same
    destination partition, those from it on at or above. Consumer offset sync translates a
    group's place through them (flow_offsets.py); sparse, thinned with age."""

    flow = models.ForeignKey(MergeFlow, on_delete=models.CASCADE, related_name="checkpoints")
    partition = models.IntegerField()
    source_next = models.BigIntegerField()
    destination_next = models.BigIntegerField()
    taken_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["flow", "partition", "source_next"]
        indexes = [models.Index(fields=["flow", "partition", "source_next"])]

    def __str__(self) -> str:
        return f"{self.flow_id}[{self.partition}] {self.source_next}->{self.destination_next}"
