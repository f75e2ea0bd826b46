"""A gateway: a Kafka proxy (Kroxylicious) clients connect to instead of a cluster, routing them
to one of the clusters it may route to (docs/gateways.md)."""

from __future__ import annotations

from django.db import models

from replication.models.clusters import NAME_VALIDATOR, KafkaCluster


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
