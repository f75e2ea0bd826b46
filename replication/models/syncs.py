"""What the syncers keep per consumer group and schema subject."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from replication.models.links import ClusterLink


class GroupOffsetSync(models.Model):
    """How a source consumer group's offsets stand on the destination, by the offset syncer."""

    class State(models.TextChoices):
        IN_STEP = "IN_STEP"  # the destination holds the source's offsets, translated
        BEHIND_MIRROR = "BEHIND_MIRROR"  # the group is past what the mirror has copied so far
        BEHIND_FLOW = "BEHIND_FLOW"  # past a merge flow's newest checkpoint
        SKIPPED = "SKIPPED"  # not written: `reason` says why (active members, say)
        FAILED = "FAILED"

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="group_syncs")
    group = models.CharField(max_length=255)
    destination_group = models.CharField(max_length=255)
    state = models.CharField(max_length=20, choices=State.choices)
    reason = models.TextField(blank=True)
    # What the destination holds for the group, as last written or read:
    # {"mirror topic/partition": offset}.
    offsets = models.JSONField(default=dict, blank=True)
    # On merge flows' topics: how many records the group may read again there, at most, after
    # it moves (flow_offsets.py): {"destination topic/partition": records}.
    may_repeat = models.JSONField(default=dict, blank=True)
    written_at = models.DateTimeField(null=True, blank=True)
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["group"]
        constraints = [
            models.UniqueConstraint(fields=["link", "group"], name="one_sync_per_link_group")
        ]

    def __str__(self) -> str:
        return f"{self.group} on link {self.link_id}: {self.state}"

    @property
    def topics(self) -> set[str]:
        """The mirror topics it has offsets on."""
        return {key.rsplit("/", 1)[0] for key in self.offsets}


class SchemaSubjectSync(models.Model):
    """How a schema subject stands on the destination's registry, by the schema syncer
    (link_schema_sync.py): its versions under the source's ids, or what stopped it."""

    class State(models.TextChoices):
        IN_STEP = "IN_STEP"  # every version of the source's is there, same id and version
        CONFLICT = "CONFLICT"  # the destination holds another schema where one must go
        FAILED = "FAILED"  # a registry refused or did not answer: `message` says
        PROMOTED = "PROMOTED"  # its topic was promoted: writable there, no longer synced

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="schema_syncs")
    subject = models.CharField(max_length=255)
    state = models.CharField(max_length=20, choices=State.choices)
    versions = models.JSONField(default=list, blank=True)  # in step on both sides
    # The level its new versions are checked against on the source, given to it on the
    # destination ("" until a run reads it).
    compatibility = models.CharField(max_length=40, blank=True)
    message = models.TextField(blank=True)
    synced_at = models.DateTimeField(default=timezone.now)
    changed_at = models.DateTimeField(default=timezone.now)  # when the sync last changed it there

    class Meta:
        ordering = ["subject"]
        constraints = [
            models.UniqueConstraint(fields=["link", "subject"], name="one_sync_per_link_subject")
        ]

    def __str__(self) -> str:
        return f"{self.subject} on link {self.link_id}: {self.state}"
