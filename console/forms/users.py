"""The users page's forms."""

from __future__ import annotations

from django import forms

from replication.governance.policy import ROLES

ROLE_SELECT = forms.Select(choices=[(role, role) for role in ROLES])


class UserForm(forms.Form):
    username = forms.CharField(widget=forms.TextInput(attrs={"autocomplete": "off"}))
    email = forms.CharField(required=False, label="Email (optional)")
    role = forms.CharField(widget=ROLE_SELECT, initial="viewer")


class RoleForm(forms.Form):
    role = forms.CharField(widget=ROLE_SELECT)
