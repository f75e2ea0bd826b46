from django import forms

from replication import link_configs
from replication.clusters import parse_properties
from replication.models import NAME_VALIDATOR, KafkaCluster
from replication.policy import ROLES


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


class PropertiesField(forms.CharField):
    """`key=value` lines, parsed into a dict; the error names the line, never its content."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 5}))
        super().__init__(**kwargs)

    def clean(self, value):
        try:
            return parse_properties(super().clean(value) or "")
        except ValueError as exc:
            raise forms.ValidationError(f"{exc} is not 'key=value'.") from exc


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
        help_text="A registered cluster: the link connects with its address and credentials.",
    )
    configs = PropertiesField(
        label="Link configs",
        widget=forms.Textarea(
            attrs={
                "rows": 6,
                "placeholder": "bootstrap.servers=localhost:9092\nmetadata.max.age.ms=5000",
            }
        ),
        help_text="One key=value per line. Secrets are encrypted at rest and never shown again.",
    )

    def link_configs(self) -> dict[str, str]:
        """The configs to create the link with: the chosen source's connection, then the text.

        Raises ReplicationError when the source's connection cannot be a link's.
        """
        source = self.cleaned_data["source"]
        base = link_configs.from_cluster(source) if source is not None else {}
        return {**base, **self.cleaned_data["configs"]}


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


class MirrorForm(forms.Form):
    source_topic = forms.CharField(max_length=249)
    replication_factor = forms.IntegerField(
        required=False, min_value=1, max_value=32767, help_text="Empty: the destination's default."
    )
    configs = PropertiesField(
        label="Config overrides",
        help_text="One key=value per line, e.g. retention.ms=7776000000. Strictly mirrored "
        "configs (cleanup.policy, max.message.bytes, message.timestamp.type) come from the source.",
    )


class ConfirmForm(forms.Form):
    force = forms.BooleanField(required=False)


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "laptop CLI"}),
        help_text="What the token is for, so you know which one to revoke.",
    )


class StopForm(forms.Form):
    """Promote, fail over or delete a link: why, and (an admin's failover) whether to break
    glass."""

    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Approvers and the audit trail read it.",
    )
    break_glass = forms.BooleanField(
        required=False,
        label="Break glass: fail over at once, without approval (flagged everywhere)",
    )
    force = forms.BooleanField(required=False, label="Force: fail its mirror topics over first")


class RejectForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class ApprovalPolicyForm(forms.Form):
    approvals_required = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in range(4)], coerce=int, label="Approvals required"
    )
    admin_may_override = forms.BooleanField(required=False, label="An admin may act at once")


# Plain text behind a select: `replication.users` checks usernames, emails and roles, says
# what is wrong (naming the roles) and audits the refusal.
ROLE_SELECT = forms.Select(choices=[(role, role) for role in ROLES])


class UserForm(forms.Form):
    username = forms.CharField(widget=forms.TextInput(attrs={"autocomplete": "off"}))
    email = forms.CharField(required=False, label="Email (optional)")
    role = forms.CharField(widget=ROLE_SELECT, initial="viewer")


class RoleForm(forms.Form):
    role = forms.CharField(widget=ROLE_SELECT)
