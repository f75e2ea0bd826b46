"""The gateways' forms: a new gateway, and a change of its address or clusters."""

from __future__ import annotations

from django import forms

from replication.models import KafkaCluster


def _clusters() -> forms.ModelMultipleChoiceField:
    return forms.ModelMultipleChoiceField(
        queryset=KafkaCluster.objects.order_by("name"),
        to_field_name="name",
        widget=forms.CheckboxSelectMultiple,
        label="Clusters it may route to",
        help_text="A switch moves its clients to one of these; its route is one of them.",
    )


def _address(**kwargs) -> forms.CharField:
    return forms.CharField(
        label="Address its clients connect to",
        max_length=300,
        widget=forms.TextInput(attrs={"placeholder": "127.0.0.1:29400"}),
        help_text="HOST:PORT, on loopback unless ISTHMUS_GATEWAY_ANY_ADDRESS allows others. The "
        "proxy takes the ports after it too: one for each broker, then its metrics.",
        **kwargs,
    )


class GatewayForm(forms.Form):
    name = forms.CharField(max_length=200)
    address = _address()
    clusters = _clusters()
    route = forms.ModelChoiceField(
        queryset=KafkaCluster.objects.order_by("name"),
        to_field_name="name",
        empty_label=None,
        label="Routes its clients to",
        help_text="The cluster its clients reach now: every topic (Kroxylicious 0.12.0 routes "
        "a whole virtual cluster to one cluster).",
    )


class GatewayChangeForm(forms.Form):
    address = _address()
    clusters = _clusters()
