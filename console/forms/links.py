"""The link forms: create a link, set and reset its configs, promote its schema subjects."""

from __future__ import annotations

import re

from django import forms

from console.forms.common import PropertiesField, approval_reason
from replication.models import NAME_VALIDATOR, KafkaCluster


class LinkForm(forms.Form):
    name = forms.CharField(label="Link name", max_length=200, validators=[NAME_VALIDATOR])
    destination = forms.ModelChoiceField(
        KafkaCluster.objects.all(), empty_label=None, help_text="The cluster that holds mirrors."
    )
    source = forms.ModelChoiceField(
        KafkaCluster.objects.all(),
        required=False,
        empty_label="(given by bootstrap.servers below)",
        label="Source cluster",
        help_text="A registered cluster: the link connects to its registered address as the "
        "principal registered for links from it.",
    )
    configs = PropertiesField(
        label="Link configs",
        widget=forms.Textarea(
            attrs={
                "rows": 6,
                "placeholder": "bootstrap.servers=localhost:9092\nmetadata.max.age.ms=5000",
            }
        ),
        help_text="One key=value per line. Secrets are encrypted at rest and never shown again. "
        "Both ways (active-active): link.mode=BIDIRECTIONAL, with cluster.link.prefix (this "
        "half's mirrors) and remote.cluster.link.prefix (the other half's) to keep each side's "
        "mirrors apart from its own topics.",
    )


class LinkConfigForm(forms.Form):
    """Set and reset link configs in one change (so e.g. SASL can be swapped for SSL)."""

    set = PropertiesField(
        label="Set", widget=forms.Textarea(attrs={"rows": 2, "placeholder": "key=value"})
    )
    reset = forms.CharField(
        required=False,
        max_length=2000,  # config names, comma-separated: far more than all of them
        label="Reset to default",
        widget=forms.TextInput(attrs={"placeholder": "key,key"}),
    )

    def names_to_reset(self) -> list[str]:
        return [n.strip() for n in self.cleaned_data["reset"].split(",") if n.strip()]


class PromoteSubjectsForm(forms.Form):
    subjects = forms.CharField(
        max_length=64 * 1024,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="Synced subjects, comma-separated or one a line (the link's page lists them).",
    )
    reason = approval_reason()

    def clean_subjects(self) -> list[str]:
        return [s.strip() for s in re.split(r"[,\n]", self.cleaned_data["subjects"]) if s.strip()]
