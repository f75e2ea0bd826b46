"""A registered Kafka cluster."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from infra.client_config import principal
from infra.schema_registry import SchemaRegistry
from replication.core import crypto
from spark_jobs import control

NAME_VALIDATOR = RegexValidator(
    r"\A(?!\.{1,2}\Z)[a-zA-Z0-9._-]{1,200}\Z",
    "Use 1-200 letters, digits, '.', '_' or '-' (and not '.' or '..').",
)

ENGINE_VALIDATOR = RegexValidator(
    rf"\A(?:{settings.ENGINE_NAME_PATTERN})?\Z",
    "Use 1-40 lower-case letters, digits and '-', starting with a letter or digit (or leave it "
    "empty for the console's own engine).",
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
    # The principal a link whose source is this cluster connects as (its client config, without
    # bootstrap.servers, secrets apart as above): one with only what copying needs, never the
    # console's own (often a super-user, which Kafka lets past every ACL).
    link_config = models.JSONField(default=dict, blank=True)
    link_secret_config = models.JSONField(default=dict, blank=True)
    cluster_id = models.CharField(
        max_length=64, blank=True, help_text="The Kafka cluster id found when it was registered."
    )
    # The engine of the cluster's network zone, which copies the links this cluster initiates
    # (started there by `manage.py engine`); "" the console's own, which reaches every cluster.
    engine = models.CharField(max_length=40, blank=True, default="", validators=[ENGINE_VALIDATOR])
    # The cluster's schema registry (Confluent's REST API), if it has one: where the schemas
    # of its records' ids are. The password is a Fernet token, used at this URL only.
    schema_registry_url = models.CharField(max_length=1000, blank=True)
    schema_registry_username = models.CharField(max_length=200, blank=True)
    schema_registry_password = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # One registration a cluster: two names for one cluster id would let a path by id
            # resolve to either, and a link's half land on the wrong registration.
            models.UniqueConstraint(
                fields=["cluster_id"],
                condition=~models.Q(cluster_id=""),
                name="one_registration_per_cluster_id",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def set_client_config(self, config: dict[str, str]) -> None:
        """Store `config` (without bootstrap.servers), encrypting its sensitive values."""
        self.client_config, self.secret_config = crypto.split_secrets(config)

    def connection_config(self) -> dict[str, str]:
        """The full client config to connect with, secrets decrypted."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **crypto.join_secrets(self.client_config, self.secret_config),
        }

    def display_config(self) -> list[tuple[str, str]]:
        """The client config as shown to people: sensitive values masked."""
        return sorted(crypto.masked(self.client_config, self.secret_config).items())

    def set_link_config(self, config: dict[str, str]) -> None:
        """Store the links' principal (without bootstrap.servers), encrypting its secrets."""
        self.link_config, self.link_secret_config = crypto.split_secrets(config)

    def link_connection_config(self) -> dict[str, str]:
        """The links' principal at the registered address, secrets decrypted."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **crypto.join_secrets(self.link_config, self.link_secret_config),
        }

    def schema_registry(self, context: str = "") -> SchemaRegistry | None:
        """A client of the cluster's schema registry at its registered URL (in a schema
        `context` of it, if given), or None."""
        spec = self.schema_registry_spec(context)
        if spec is None:
            return None
        # The syncers share a worker: a registry gone quiet must not hold it long.
        return SchemaRegistry(spec["url"], spec["username"], spec["password"], timeout=5)

    def schema_registry_spec(self, context: str = "") -> control.RegistrySpec | None:
        """Where the cluster's schema registry is and its credentials (decrypted), or None.
        A context is a prefix of the URL's paths, as Confluent's clients address one."""
        if not self.schema_registry_url:
            return None
        password = self.schema_registry_password
        url = self.schema_registry_url.rstrip("/")
        return {
            "url": f"{url}/contexts/.{context}" if context else url,
            "username": self.schema_registry_username or None,
            "password": crypto.decrypt(password) if password else None,
        }

    @property
    def link_principal(self) -> str:
        """Who links from this cluster connect as ("" for none registered)."""
        if not (self.link_config or self.link_secret_config):
            return ""
        return principal(self.link_connection_config())
