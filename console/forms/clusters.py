"""The cluster registry's form."""

from __future__ import annotations

from django import forms

from replication.models import NAME_VALIDATOR
from replication.models.clusters import ENGINE_VALIDATOR
from replication.schemas.schema_registries import MAX_PASSWORD, RegistryAccess


class SchemaRegistryForm(forms.Form):
    """A cluster's schema registry: its URL and the credentials to use there."""

    # Not stripped here: a line break at the end is refused (schema_registries.checked), not
    # silently dropped from what was typed.
    schema_registry_url = forms.CharField(
        label="Schema registry",
        required=False,
        max_length=1000,
        strip=False,
        widget=forms.TextInput(attrs={"placeholder": "http://registry.example.com:8081"}),
        help_text="The registry of this cluster's schemas (Confluent's REST API). Checked to "
        "answer before it is kept. Empty: none.",
    )
    schema_registry_username = forms.CharField(
        label="Registry username or API key", required=False, max_length=200, strip=False
    )
    schema_registry_password = forms.CharField(
        label="Registry password or API secret",
        required=False,
        max_length=MAX_PASSWORD,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Encrypted at rest, never shown again, used at this registry's URL only.",
    )

    def access(self) -> RegistryAccess:
        data = self.cleaned_data
        return RegistryAccess(
            data["schema_registry_url"],
            data["schema_registry_username"],
            data["schema_registry_password"],
        )


class ClusterForm(SchemaRegistryForm):
    """Registering a cluster: its connection, its links' credentials, its schema registry."""

    field_order = ["name", "bootstrap_servers", "client_config", "link_config", "engine"]
    name = forms.CharField(max_length=200, validators=[NAME_VALIDATOR])
    bootstrap_servers = forms.CharField(
        label="bootstrap.servers",
        max_length=1000,
        widget=forms.TextInput(attrs={"placeholder": "broker1:9092,broker2:9092"}),
    )
    client_config = forms.CharField(
        label="Client config",
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 5, "placeholder": "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN"}
        ),
        help_text="One key=value per line, confluent-kafka property names. "
        "Passwords and keys are encrypted at rest and never shown again.",
    )
    link_config = forms.CharField(
        label="Link credentials",
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 4,
                "placeholder": "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                "sasl.username=replicator\nsasl.password=…",
            }
        ),
        help_text="Who links from this cluster connect as: a principal that may only read "
        "(not the console's, often a super-user, which passes every ACL). Used at this "
        "cluster's address only. Empty: a link from it gives its own credentials.",
    )
    engine = forms.CharField(
        label="Engine of its network zone",
        required=False,
        max_length=40,
        validators=[ENGINE_VALIDATOR],
        widget=forms.TextInput(attrs={"placeholder": "on-prem"}),
        help_text="Where the cluster sits behind a firewall that lets nothing in: the name "
        "of the engine kept there (manage.py engine with ISTHMUS_ENGINE_NAME), which copies "
        "the links this cluster initiates. Empty: the console's own engine.",
    )
