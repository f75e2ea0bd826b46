"""The account page's forms: a new API token, a password of one's own."""

from __future__ import annotations

from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "laptop CLI"}),
        help_text="What the token is for, so you know which one to revoke.",
    )


class ChoosePasswordForm(forms.Form):
    old_password = forms.CharField(
        label="Current password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )
    new_password = forms.CharField(
        label="New password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, and not a common password.",
    )
    new_password_again = forms.CharField(
        label="New password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self):
        data = super().clean()
        new, again = data.get("new_password"), data.get("new_password_again")
        if new and again and new != again:
            self.add_error("new_password_again", "The two new passwords differ; type it again.")
        return data
