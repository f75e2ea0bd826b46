from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from . import crypto

NAME_VALIDATOR = RegexValidator(
    r"^(?!\.{1,2}$)[a-zA-Z0-9._-]{1,200}$",
    "Use 1-200 letters, digits, '.', '_' or '-' (and not '.' or '..').",
)


class KafkaCluster(models.Model):
    """A Kafka cluster the console talks to, with the client config used to reach it.

    Secret values of the client config are kept in `secret_config`, each encrypted on its own
    (so their names can be listed without the key) and never rendered back; `client_config`
    holds only the non-secret keys.
    """

    name = models.CharField(max_length=200, unique=True, validators=[NAME_VALIDATOR])
    bootstrap_servers = models.CharField(max_length=1000)
    client_config = models.JSONField(default=dict, blank=True)
    secret_config = models.JSONField(default=dict, blank=True, help_text="key -> Fernet token")
    cluster_id = models.CharField(
        max_length=64, blank=True, help_text="The Kafka cluster id found when it was registered."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def set_client_config(self, config: dict[str, str]) -> None:
        """Store `config` (without bootstrap.servers), encrypting its sensitive values."""
        self.client_config = {k: v for k, v in config.items() if not crypto.is_sensitive(k)}
        self.secret_config = {
            k: crypto.encrypt(v) for k, v in config.items() if crypto.is_sensitive(k)
        }

    def connection_config(self) -> dict[str, str]:
        """The full client config to connect with, secrets decrypted."""
        secrets = {k: crypto.decrypt(token) for k, token in self.secret_config.items()}
        return {"bootstrap.servers": self.bootstrap_servers, **self.client_config, **secrets}

    def display_config(self) -> list[tuple[str, str]]:
        """The client config as shown to people: sensitive values masked."""
        masked = dict.fromkeys(self.secret_config, crypto.SENSITIVE_MASK)
        return sorted({**self.client_config, **masked}.items())


class AuditEvent(models.Model):
    """An append-only record of one mutating action."""

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

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.target}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("Audit events are append-only.")
        super().save(*args, **kwargs)
