"""Approval requests, their approvals and notifications."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from replication.models.clusters import KafkaCluster
from replication.models.links import ClusterLink


class ApprovalRequest(models.Model):
    """A promote, failover or link deletion asked for by one person, to be approved by others
    before it runs (see approvals.py)."""

    class Action(models.TextChoices):
        PROMOTE = "promote"
        FAILOVER = "failover"
        DELETE_LINK = "delete-link"
        REVERSE_AND_START = "reverse-and-start-mirror"
        REVERSE_AND_PAUSE = "reverse-and-pause-mirror"
        TRUNCATE_AND_RESTORE = "truncate-and-restore"
        CREATE_FLOW = "create-flow"
        DELETE_FLOW = "delete-flow"
        PROMOTE_SUBJECTS = "promote-subjects"

    class State(models.TextChoices):
        PENDING = "PENDING"  # waiting for approvals
        APPROVED = "APPROVED"  # approved; running
        EXECUTED = "EXECUTED"
        FAILED = "FAILED"  # approved, but running it failed (see result)
        REJECTED = "REJECTED"
        WITHDRAWN = "WITHDRAWN"
        EXPIRED = "EXPIRED"
        # its target changed before it ran (decision_reason says by what)
        SUPERSEDED = "SUPERSEDED"

    link = models.ForeignKey(
        ClusterLink, null=True, on_delete=models.SET_NULL, related_name="approval_requests"
    )
    # Kept for the record after the link is gone (a link deletion, say).
    link_name = models.CharField(max_length=200)
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=30, choices=Action.choices)
    topics = models.JSONField(default=list, blank=True)
    # A link deletion that fails the link's mirrors over first.
    force = models.BooleanField(default=False)
    # A merge flow's request: {"flow": name} and, to create it, "source_topic",
    # "destination_topic" and "mapping" as asked (merge_flows.create_flow's arguments).
    params = models.JSONField(default=dict, blank=True)
    reason = models.TextField()
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requester_name = models.CharField(max_length=150)
    approvals_required = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    state_time = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    expires_at = models.DateTimeField()
    # The dry run at request time (per topic: what would happen, the lag per partition).
    plan = models.JSONField(default=list, blank=True)
    # What approving would do, as it was when asked (actions.plans.Plan: the action in words,
    # the clusters and direction, the dry run, producers, consumer groups); {}: asked before
    # plans were kept.
    plan_at_request = models.JSONField(default=dict, blank=True)
    # Per topic outcome once run; `progress` says what it is doing while it runs.
    result = models.JSONField(default=list, blank=True)
    progress = models.CharField(max_length=400, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decision_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"request {self.pk}: {self.get_action_display()} on link {self.link_name}"

    @property
    def is_open(self) -> bool:
        return self.state in (self.State.PENDING, self.State.APPROVED)

    @property
    def params_summary(self) -> str:
        """What a merge flow or schema subjects request acts on, in words ("" for the other
        actions)."""
        p = self.params
        if self.action == self.Action.CREATE_FLOW:
            # Named with its cluster: two flows one each way over a bidirectional link share
            # their name and topics.
            into = f"{p['source_topic']} into {p['destination_topic']} on {self.destination.name}"
            return f"merge flow {p['flow']}: {into}" + (f", {p['mapping']}" if p["mapping"] else "")
        if self.action == self.Action.DELETE_FLOW:
            return f"merge flow {p['flow']}"
        if self.action == self.Action.PROMOTE_SUBJECTS:
            named = ", ".join(p["subjects"][:5])
            more = len(p["subjects"]) - 5
            return f"schema subjects {named}" + (f" and {more} more" if more > 0 else "")
        return ""


class Notification(models.Model):
    """What a requester is told when their request is decided or has run (notifications.py):
    shown in the console, and sent by webhook and e-mail where those are configured."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    request = models.ForeignKey(
        ApprovalRequest, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    event = models.CharField(max_length=40)  # request.approved, request.rejected, ...
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)
    # How it went out: {"webhook": "sent" | "failed: …", "email": …}; empty: console only.
    delivery = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "read_at"])]

    def __str__(self) -> str:
        return self.text


class Approval(models.Model):
    """One approver's yes to a request."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="approvals")
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    approver_name = models.CharField(max_length=150)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at"]
        constraints = [
            models.UniqueConstraint(fields=["request", "approver"], name="one_approval_per_person")
        ]

    def __str__(self) -> str:
        return f"{self.approver_name} approved request {self.request_id}"
