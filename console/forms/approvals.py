"""Promote, failover and link deletion (asked for, approved, rejected), and a link's approval
policy."""

from __future__ import annotations

from django import forms

from console.forms.common import ConfirmForm


class StopForm(ConfirmForm):
    """Promote, fail over or delete a link (none can be undone: `name` is required): why,
    (an admin's failover) whether to break glass, and (a link with mirrors) whether to force."""

    def __init__(self, data, *, name: str, undo: str = ""):
        super().__init__(data, name=name, undo=undo)

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
    # Plain text behind a select of the gateways: replication/actions/gateway_moves.py checks it.
    gateway = forms.CharField(required=False, max_length=200)


class RejectForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class ApprovalPolicyForm(forms.Form):
    approvals_required = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in range(4)], coerce=int, label="Approvals required"
    )
    admin_may_override = forms.BooleanField(required=False, label="An admin may act at once")


# Plain text behind a select: `replication.governance.users` checks usernames, emails and roles,
# says what is wrong (naming the roles) and audits the refusal.
