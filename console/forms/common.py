"""Fields and forms every area uses: key=value config fields, typed confirmations."""

from __future__ import annotations

from django import forms

from replication.kafka.clusters import parse_properties


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


class ConfirmForm(forms.Form):
    """Yes to a change; for what cannot be undone (`name` given), the name of what changes,
    typed. `undo` says how it is undone where it can be, in other ways than a click (a reverse
    by another reverse); else the form says it cannot be."""

    def __init__(self, data, *, name: str = "", undo: str = ""):
        super().__init__(data)
        self.name = name
        self.undo = undo
        if not name:
            del self.fields["confirm_name"]

    confirm_name = forms.CharField(
        required=False,  # said by clean_confirm_name, with the name to type
        max_length=300,
        label="Name, typed to confirm",
        widget=forms.TextInput(
            attrs={"required": True, "autocomplete": "off", "spellcheck": "false"}
        ),
    )

    def clean_confirm_name(self) -> str:
        typed = self.cleaned_data["confirm_name"].strip()
        if typed != self.name:
            raise forms.ValidationError(
                f"Type {self.name} to confirm; nothing was changed."
                if typed
                else f"Type {self.name} to confirm: {self.undo or 'this cannot be undone.'}"
            )
        return typed


def approval_reason() -> forms.CharField:
    """The reason of an action that follows the link's approval policy."""
    return forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Where the link's policy asks for approval: approvers and the audit trail "
        "read it.",
    )
