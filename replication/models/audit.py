"""The audit trail's events."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEventQuerySet(models.QuerySet):
    """Audit events are only ever added: bulk updates and deletes are refused too."""

    def update(self, **kwargs):
        raise ValueError("Audit events are append-only.")

    def delete(self):
        raise ValueError("Audit events are append-only.")


class AuditEvent(models.Model):
    """An append-only record of one mutating action.

    `objects` refuses update() and delete(). Django's own bookkeeping goes through the plain
    base manager: deleting a user sets `actor` to NULL with an UPDATE through it (actor_name
    keeps who it was).
    """

    class Result(models.TextChoices):
        OK = "ok"
        REFUSED = "refused"
        FAILED = "failed"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_name = models.CharField(max_length=150, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=400, blank=True)
    action = models.CharField(max_length=100)
    target = models.CharField(max_length=400, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    result = models.CharField(max_length=10, choices=Result.choices)
    message = models.TextField(blank=True)
    # The mirror topics it concerns, one per line (a request's, an approval's, a mirror's own),
    # so the trail is searched by topic whatever the event's target.
    topics = models.TextField(blank=True)
    # An admin acting at once in a disaster, without approval.
    break_glass = models.BooleanField(default=False, db_index=True)

    objects = AuditEventQuerySet.as_manager()
    plain = models.Manager()  # noqa: DJ012 (a manager; ruff only knows `objects` as one)

    class Meta:
        ordering = ["-at", "-id"]
        base_manager_name = "plain"
        indexes = [
            # The audit page pages newest first, optionally filtered by action or result.
            models.Index(fields=["-at", "-id"], name="audit_newest_first"),
            models.Index(fields=["action", "-at", "-id"], name="audit_action_newest"),
            models.Index(fields=["result", "-at", "-id"], name="audit_result_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.target}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("Audit events are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("Audit events are append-only.")
