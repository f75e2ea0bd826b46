"""Verifications of a mirror against its source."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from replication.models.mirrors import MirrorTopic


class Verification(models.Model):
    """A verification asked for (`kafka-mirrors --verify`, the API, the mirror page): every
    record of a range of source offsets compared with the mirror's, with its progress."""

    class State(models.TextChoices):
        RUNNING = "RUNNING"
        IDENTICAL = "IDENTICAL"
        DIFFERENT = "DIFFERENT"
        FAILED = "FAILED"

    mirror = models.ForeignKey(MirrorTopic, on_delete=models.CASCADE, related_name="verifications")
    requested_by = models.CharField(max_length=150)
    state = models.CharField(max_length=12, choices=State.choices, default=State.RUNNING)
    # {partition: [first, end)} in source offsets, as asked (None: from the log start, to the
    # end the mirror has copied when it starts).
    from_offset = models.BigIntegerField(null=True, blank=True)
    to_offset = models.BigIntegerField(null=True, blank=True)
    # Once started: {partition: {"first", "end", "at"}}: the source range compared and how far.
    ranges = models.JSONField(default=dict, blank=True)
    total = models.BigIntegerField(default=0)  # source offsets in the ranges
    checked = models.BigIntegerField(default=0)  # source offsets done
    identical = models.BigIntegerField(default=0)  # records found identical
    differences = models.JSONField(default=list, blank=True)
    differing_records = models.BigIntegerField(default=0)
    notes = models.JSONField(default=list, blank=True)  # what could not be compared, and why
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)  # the worker running it is alive
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"verification {self.pk} of {self.mirror}"
