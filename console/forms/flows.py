from django import forms

from console.forms.common import approval_reason
from replication.models import MergeFlow


class FlowForm(forms.Form):
    source_topic = forms.CharField(max_length=249, help_text="A topic of the link's source.")
    destination_topic = forms.CharField(
        max_length=249,
        required=False,
        help_text="Empty: the same name. An ordinary topic, made with the source's partitions "
        "when it does not exist; other flows and producers may write it too.",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Empty: <link name>.<source topic>."
    )
    mapping = forms.ChoiceField(
        label="Partition mapping",
        required=False,
        choices=[("", "Automatic"), *((m.value, m.label) for m in MergeFlow.Mapping)],
        help_text="Automatic: one to one when the partition counts are equal, else by key (as "
        "Kafka's default partitioner places each key).",
    )
    reason = approval_reason()


class ReplicatorImportForm(forms.Form):
    configuration = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
        max_length=256 * 1024,
        help_text="A Replicator connector's configuration: Kafka Connect's JSON (with or without "
        'its "config" wrapper) or a properties file.',
    )
