"""Scenario runs and their steps."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class ScenarioRun(models.Model):
    """One run of a scenario (`replication/scenarios/`): its steps' results, kept."""

    class Status(models.TextChoices):
        WAITING = "WAITING"  # for the user to run its next step (or the rest)
        RUNNING = "RUNNING"
        PASSED = "PASSED"
        FAILED = "FAILED"  # a step failed; until it ended (`finished_at`), it can be retried
        ENDED = "ENDED"  # ended by the user before its last step

    scenario = models.CharField(max_length=60)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    actor_name = models.CharField(max_length=150)
    # The run's own names (topic, link), so it never touches a user's and can run again.
    names = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)  # when it last went on
    cleanup = models.TextField(blank=True, help_text="What cleaning up after the run left.")
    # What steps keep for later ones (offsets read, records seen), so the next step can run
    # in another task.
    kept = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"{self.scenario} run {self.pk}: {self.status}"


class ScenarioStep(models.Model):
    """A step of a run: what it did, what it checked on the clusters and what it saw."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        RUNNING = "RUNNING"
        PASSED = "PASSED"
        FAILED = "FAILED"
        SKIPPED = "SKIPPED"  # not run: an earlier step failed, or the run was ended

    run = models.ForeignKey(ScenarioRun, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveSmallIntegerField()
    title = models.CharField(max_length=200)
    explanation = models.TextField(blank=True)
    cli = models.TextField(blank=True, help_text="The equivalent command line.")
    expected = models.TextField(blank=True)
    seen = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    started_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_step_per_index")]

    def __str__(self) -> str:
        return f"step {self.index + 1} of run {self.run_id}: {self.title}"
