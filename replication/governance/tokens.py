"""Personal API tokens: made and revoked by their owner, stored only as a digest.

A token carries its owner's roles at the time of each call, so a role change or a disabled
account takes effect at once.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from replication.core.errors import ReplicationError, conflict
from replication.governance import audit
from replication.models import ApiToken

TOKEN_PREFIX = "isthmus_"  # noqa: S105 (a marker, not a secret)
# last_used_at is a hint for the owner; writing it on every call would cost a write per call.
_USE_RESOLUTION = timedelta(minutes=1)


def _digest(secret: str) -> str:
    # The secret is 256 random bits, so a plain hash is enough: nothing to brute-force.
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(actor: audit.Actor, user, name: str) -> tuple[ApiToken, str]:
    """Make a token for `user`; return it and its secret, which is never stored or shown again."""
    name = name.strip()
    target = f"API token {name!r} of {user.get_username()}"
    with audit.refusals(actor, "token.create", target):
        # Control characters (a newline, an escape) would garble the lists that show the name.
        if not name or len(name) > 100 or not name.isprintable():
            raise ReplicationError(
                "Give the token a name of 1-100 characters, none of them a newline, tab or other "
                "control character, e.g. 'laptop CLI'."
            )
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        try:
            with transaction.atomic():
                token = ApiToken.objects.create(
                    user=user, name=name, prefix=secret[:12], digest=_digest(secret)
                )
        except IntegrityError as exc:
            raise conflict(f"You already have a token named {name!r}; pick another name.") from exc
    audit.record(actor, "token.create", target, after={"name": name, "prefix": token.prefix})
    return token, secret


def revoke_token(actor: audit.Actor, token: ApiToken) -> None:
    target = f"API token {token.name!r} of {token.user.get_username()}"
    before = {"name": token.name, "prefix": token.prefix}
    audit.ensure_writable()
    token.delete()
    audit.record(actor, "token.revoke", target, before=before)


def is_token(secret: str) -> bool:
    """Whether this looks like an API token's secret (not, say, an account password)."""
    return secret.startswith(TOKEN_PREFIX)


def authenticate(secret: str) -> ApiToken | None:
    """The token with this secret, if its user is active."""
    if not is_token(secret):
        return None
    token = ApiToken.objects.select_related("user").filter(digest=_digest(secret)).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > _USE_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
