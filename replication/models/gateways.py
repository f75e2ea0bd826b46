"""A gateway: a Kafka proxy (Kroxylicious) clients connect to instead of a cluster, routing them
to one of the clusters it may route to (docs/gateways.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from replication.models.approvals import ApprovalRequest
from replication.models.clusters import NAME_VALIDATOR, KafkaCluster
from replication.models.links import ClusterLink


class Gateway(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[NAME_VALIDATOR])
    # Where clients reach it: the bootstrap address; the proxy holds the ports after it too
    # (one per node id, then its metrics: infra/kroxylicious.py).
    host = models.CharField(max_length=253, default="127.0.0.1")
    port = models.PositiveIntegerField()
    clusters = models.ManyToManyField(KafkaCluster, related_name="gateways")
    # The cluster its clients reach now: the whole virtual cluster, every topic (Kroxylicious
    # 0.12.0 routes a virtual cluster to one cluster).
    route = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    switches = models.PositiveIntegerField(default=0)
    switched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["host", "port"], name="one_gateway_per_address")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class GatewayMove(models.Model):
    """A gateway's switch a cutover asked for (replication/actions/gateway_moves.py): made once
    every mirror topic it names is writable on `to` (a restore's, at once), with the authority
    of whoever asked."""

    class State(models.TextChoices):
        WAITING = "WAITING"
        SWITCHING = "SWITCHING"  # a worker switches it now
        SWITCHED = "SWITCHED"
        FAILED = "FAILED"

    DONE = frozenset({State.SWITCHED, State.FAILED})

    gateway = models.ForeignKey(Gateway, on_delete=models.CASCADE, related_name="moves")
    link = models.ForeignKey(ClusterLink, on_delete=models.CASCADE, related_name="gateway_moves")
    action = models.CharField(max_length=40, choices=ApprovalRequest.Action.choices)
    topics = models.JSONField(default=list)  # the mirror topics of `link` it waits for
    to = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="+")
    request = models.ForeignKey(
        ApprovalRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="moves"
    )
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requester_name = models.CharField(max_length=150)
    # Asked by Isthmus itself (a command run on its host), not by a user of the console.
    by_system = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=State.choices, default=State.WAITING)
    message = models.TextField(blank=True)  # what came of it, in words
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.gateway} to {self.to} after {self.action} on {self.link}"
