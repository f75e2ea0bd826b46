"""The cluster registry's form."""

from __future__ import annotations

from django import forms

from replication.models import NAME_VALIDATOR


class ClusterForm(forms.Form):
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
