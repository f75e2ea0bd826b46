"""DR drills: each run of a link's drill (a failover and fail back of a canary topic of its
own, `replication/scenarios/drills.py`) and the link's drill schedule."""

from __future__ import annotations

from typing import TypedDict

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from replication.models.links import ClusterLink

# A drill's canary topic is named this and the start of its link's id. The prefix is kept for
# drills: no mirror of a user's topic may start with it (`mirror_checks`, auto-create).
CANARY_PREFIX = "isthmus-drill."


def canary_topic(link: ClusterLink) -> str:
    """The name of `link`'s drill canary on its source: unique to the link (two links of one
    name, or the two halves of a bidirectional link, never share it)."""
    return CANARY_PREFIX + link.link_id.hex[:12]


def is_canary(link: ClusterLink, mirror_topic: str) -> bool:
    """Whether `mirror_topic` on `link` mirrors a drill's canary: its own, or, on the other
    half of a bidirectional link, the canary the drill's way back mirrors there."""
    return mirror_topic.startswith(link.prefix + CANARY_PREFIX)


class MadeTopic(TypedDict):
    """A topic a drill made, by the cluster's id, its name and its topic id (a topic of that
    name made by anyone else has another id, and a clean up leaves it alone)."""

    cluster: str
    topic: str
    topic_id: str


class DrillStep(TypedDict):
    """A step of a drill as it ran: its name, how long it took, what it saw, whether it held."""

    name: str
    seconds: float
    words: str
    passed: bool


class DrillRun(models.Model):
    """One drill of a link: its steps, how long the failover and the way back took, its result."""

    class Outcome(models.TextChoices):
        RUNNING = "RUNNING"
        PASSED = "PASSED"
        FAILED = "FAILED"
        REFUSED = "REFUSED"  # a scheduled drill the link's state did not allow (`words` say why)

    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="drills")
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.RUNNING)
    started_by = models.CharField(max_length=150)
    canary = models.CharField(max_length=249, help_text="The drill's own topic on the source.")
    # Which way back it took: "restore" (truncate-and-restore, then reverse) or "delete".
    way_back = models.CharField(max_length=10, blank=True)
    steps: models.JSONField[list[DrillStep], list[DrillStep]] = models.JSONField(
        default=list, blank=True
    )
    failover_seconds = models.FloatField(null=True, blank=True)
    failback_seconds = models.FloatField(null=True, blank=True)
    words = models.TextField(blank=True, help_text="What stopped it, or a refusal's reason.")
    cleanup = models.TextField(blank=True, help_text="What cleaning up after it left.")
    made: models.JSONField[list[MadeTopic], list[MadeTopic]] = models.JSONField(
        default=list, blank=True, help_text="The topics it made and has not removed yet."
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            # Never two drills of one link at once: the database refuses the second.
            models.UniqueConstraint(
                fields=["link"], condition=Q(outcome="RUNNING"), name="one_running_drill_per_link"
            )
        ]

    def __str__(self) -> str:
        return f"drill {self.pk} of link {self.link_id}: {self.outcome}"

    @property
    def seconds(self) -> float | None:
        """How long the whole drill took, once it finished."""
        if self.finished_at is None:
            return None
        return round((self.finished_at - self.started_at).total_seconds(), 1)


class DrillSchedule(models.Model):
    """How often the beat drills a link, and when next."""

    link = models.OneToOneField(
        ClusterLink, on_delete=models.CASCADE, related_name="drill_schedule"
    )
    every_hours = models.PositiveIntegerField(
        default=24, validators=[MinValueValidator(1), MaxValueValidator(8760)]
    )
    enabled = models.BooleanField(default=False)
    next_due = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"drills of link {self.link_id} every {self.every_hours} h"
