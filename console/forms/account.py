"""The account page's form: a new API token."""

from __future__ import annotations

from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "laptop CLI"}),
        help_text="What the token is for, so you know which one to revoke.",
    )
