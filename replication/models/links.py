"""Cluster links."""

from __future__ import annotations

import uuid

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from infra.client_config import librdkafka_config, principal
from replication.core import crypto, link_configs
from replication.models.clusters import ENGINE_VALIDATOR, NAME_VALIDATOR, KafkaCluster


class ClusterLink(models.Model):
    """A named link that mirrors topics from a source cluster into `destination`.

    `configs` holds the link configs set explicitly (not defaults); secret values live encrypted
    in `secret_configs`, one Fernet token per key, exactly like a cluster's client config.
    """

    class State(models.TextChoices):
        ACTIVE = "ACTIVE"
        PAUSED = "PAUSED"
        UNAVAILABLE = "UNAVAILABLE"
        FAILED = "FAILED"

    name = models.CharField(max_length=200, validators=[NAME_VALIDATOR])
    link_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    destination = models.ForeignKey(KafkaCluster, on_delete=models.PROTECT, related_name="links")
    source_cluster_id = models.CharField(max_length=64)
    configs = models.JSONField(default=dict, blank=True)
    secret_configs = models.JSONField(default=dict, blank=True, help_text="key -> Fernet token")
    state = models.CharField(max_length=20, choices=State.choices, default=State.ACTIVE)
    # The engine that copies it: that of the network zone of the cluster that initiates the link
    # (its destination; its source for a source-initiated link), "" the deployment's own.
    engine = models.CharField(max_length=40, blank=True, default="", validators=[ENGINE_VALIDATOR])
    state_time = models.DateTimeField(default=timezone.now)
    error_code = models.CharField(max_length=60, default="NO_ERROR")
    error_message = models.TextField(blank=True)
    # Bookkeeping of the syncers: when each last ran, and the availability probe's failure run.
    availability_failures = models.PositiveIntegerField(default=0)
    availability_checked_at = models.DateTimeField(null=True, blank=True)
    metadata_refreshed_at = models.DateTimeField(null=True, blank=True)
    configs_synced_at = models.DateTimeField(null=True, blank=True)
    offsets_synced_at = models.DateTimeField(null=True, blank=True)
    acls_synced_at = models.DateTimeField(null=True, blank=True)
    schemas_synced_at = models.DateTimeField(null=True, blank=True)
    # What each syncer that could not do its work says about it, to be shown on the link:
    # {"consumer offsets" | "ACLs" | "auto-create" | "schemas": message}; a syncer's entry goes
    # when it works.
    sync_problems = models.JSONField(default=dict, blank=True)
    # Source topics whose mirrors a user deleted: not mirrored again automatically unless a
    # LITERAL INCLUDE names them (DESIGN: auto-create), or a user creates the mirror by hand.
    declined_topics = models.JSONField(default=list, blank=True)
    # The approval policy for promote, failover and deleting the link (see approvals.py).
    approvals_required = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(0), MaxValueValidator(3)]
    )
    admin_may_override = models.BooleanField(
        default=True, help_text="An admin may act without approval (recorded as an override)."
    )
    # The recovery point objective: how far behind in seconds (the age of the oldest source
    # record not yet mirrored) its mirrors may fall; none: no target. While one is further
    # behind, `rpo_breached_at` says since when (observe/rpo.py tells the operators once).
    rpo_target_seconds = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(31_536_000)]
    )
    rpo_breached_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["destination__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["destination", "name"], name="link_name_per_destination"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def set_configs(self, configs: dict[str, str]) -> None:
        """Store the explicitly set configs, encrypting their sensitive values."""
        self.configs, self.secret_configs = crypto.split_secrets(configs)

    def all_configs(self) -> dict[str, str]:
        """The explicitly set configs, secrets decrypted: for clients, never for display."""
        return crypto.join_secrets(self.configs, self.secret_configs)

    def config(self, name: str) -> str | None:
        """The effective value of a non-secret config: as set, else its default."""
        return link_configs.effective(self.configs, name)

    def int_config(self, name: str) -> int:
        value = self.config(name)
        if value is None:
            raise ValueError(f"link config {name} has no value")
        return int(value)

    @property
    def engine_label(self) -> str:
        """Which engine copies it, in words."""
        return f"engine {self.engine}" if self.engine else "the console's own engine"

    @property
    def source_initiated(self) -> bool:
        """Whether it is a source-initiated link's destination half (connection.mode=INBOUND):
        the engine beside its source copies it."""
        return self.config("connection.mode") == "INBOUND"

    @property
    def waits_for_source_half(self) -> bool:
        """A source-initiated link copies nothing until its source half is made, on the source
        (link.mode=SOURCE)."""
        return self.source_initiated and self.config("remote.link.connection.mode") != "OUTBOUND"

    def source_client_config(self) -> dict[str, str]:
        """librdkafka settings for the link's connection to its source."""
        return librdkafka_config(self.all_configs())

    @property
    def source_principal(self) -> str:
        """Who the link connects to its source as (a user name is no secret)."""
        try:
            return principal(self.all_configs())
        except (RuntimeError, ValueError):  # secrets that no longer decrypt, or a bad JAAS line
            return "unknown"

    @property
    def prefix(self) -> str:
        return self.configs.get("cluster.link.prefix", "")
