"""Sign-on identities, one-time passwords and API tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ExternalIdentity(models.Model):
    """A user who signs in through the identity provider (single_sign_on.py): who the provider
    says they are. Such a user has no password here; their role follows the provider's groups
    at each sign-in."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="external_identity",
    )
    issuer = models.CharField(max_length=400)
    subject = models.CharField(max_length=255)
    groups = models.JSONField(default=list, blank=True)  # as the provider last sent them
    signed_in_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_identity")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class OneTimePassword(models.Model):
    """A user whose password an admin handed them (made with the user, or reset): whoever signs
    in with it must choose their own before doing anything else."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="one_time_password",
    )
    issued_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"one-time password of user {self.user_id}"


class ApiToken(models.Model):
    """A personal API token: the user's roles, for the JSON API and the CLI.

    Only a SHA-256 digest of the secret is kept; the secret is shown once, when made.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # The first characters of the token, to tell tokens apart on the user's page.
    prefix = models.CharField(max_length=20)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="one_token_name_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
