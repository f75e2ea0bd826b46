"""Single sign-on with OpenID Connect: the console signs people in through the organisation's
identity provider (ISTHMUS_OIDC_*), and gives each the Isthmus role their provider groups map
to (ISTHMUS_OIDC_ROLES), again at every sign-in, so a group taken away at the provider takes the
role away here at the next sign-in. Local accounts stay for break-glass: a provider's user never
becomes one of them, even with the same name.

The console's view does the protocol (authorization code with PKCE, the ID token's signature,
issuer, audience and nonce checked by Authlib); this module decides who that is here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction

from replication.core.errors import FieldProblems, ReplicationError
from replication.governance import audit, policy, users
from replication.models import ExternalIdentity

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser as User


@dataclass(frozen=True)
class Provider:
    name: str  # what the sign-in button says
    issuer: str
    client_id: str
    client_secret: str
    groups_claim: str
    roles: dict[str, str]  # the provider's group -> an Isthmus role

    @property
    def discovery_url(self) -> str:
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"


def provider() -> Provider | None:
    """The configured identity provider, or None: single sign-on is off."""
    if not settings.OIDC_ISSUER:
        return None
    return Provider(
        settings.OIDC_NAME,
        settings.OIDC_ISSUER,
        settings.OIDC_CLIENT_ID,
        settings.OIDC_CLIENT_SECRET,
        settings.OIDC_GROUPS_CLAIM,
        settings.OIDC_ROLES,
    )


def role_for(groups: list[str], roles: dict[str, str]) -> str:
    """The strongest role the groups map to ("" if none): a user has one role here."""
    mapped = {roles[g] for g in groups if g in roles}
    return next((role for role in reversed(policy.ROLES) if role in mapped), "")


def sign_in(found: Provider, claims: dict, actor: audit.Actor) -> User:
    """The console user a verified ID token (its `claims`) names: made at the first sign-in,
    its role set from the provider's groups each time. Refused (and audited) when no group
    maps to a role, or when the name is a local account's."""
    subject = str(claims.get("sub", ""))
    name = str(claims.get("preferred_username") or claims.get("email") or subject)[:150]
    groups = claims.get(found.groups_claim) or []
    groups = [str(g) for g in groups] if isinstance(groups, list) else [str(groups)]
    who = audit.Actor(name=f"{name} (single sign-on)", address=actor.address)
    with audit.refusals(who, "account.login", "console"):
        if not subject:
            raise ReplicationError("The identity provider's answer names nobody (no 'sub').")
        role = role_for(groups, found.roles)
        if not role:
            shown = ", ".join(groups[:20]) or "none"
            raise ReplicationError(
                f"None of your groups at {found.name} ({shown}) gives an Isthmus role, so you "
                "cannot sign in. Ask an admin to map one of them (ISTHMUS_OIDC_ROLES), or to "
                "add you to a mapped group.",
                403,
            )
        user = _user(found, subject, name, groups, claims)
        if not user.is_active:
            raise ReplicationError(
                f"The account {name!r} is disabled in Isthmus; ask an admin to enable it.", 403
            )
        before = policy.roles_of(user)
        user.groups.remove(*Group.objects.filter(name__in=policy.ROLES))
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    audit.record(
        audit.Actor(user=user, name=name, address=actor.address, user_agent=actor.user_agent),
        "account.login",
        "console",
        before={"roles": sorted(before)},
        after={"role": role, "groups": groups},
        message=f"single sign-on through {found.name}",
    )
    return user


def _user(found: Provider, subject: str, name: str, groups: list[str], claims: dict) -> User:
    identity = (
        ExternalIdentity.objects.select_related("user")
        .filter(issuer=found.issuer, subject=subject)
        .first()
    )
    if identity is not None:
        identity.groups = groups
        identity.save(update_fields=["groups", "signed_in_at"])
        return identity.user
    try:
        with transaction.atomic():
            # The checks a local account's name gets: valid, and neither the same as an
            # existing user's once case is ignored nor the same to the eye.
            users.claim_name(name)
            # No password given: an unusable one; they sign in through the provider only.
            user = get_user_model().objects.create_user(name, str(claims.get("email", "")))
            ExternalIdentity.objects.create(
                user=user, issuer=found.issuer, subject=subject, groups=groups
            )
    except (FieldProblems, IntegrityError) as exc:
        said = str(exc) if isinstance(exc, FieldProblems) else f"{name!r} is taken."
        raise ReplicationError(
            f"Your name at {found.name} cannot be used here: {said} Single sign-on never "
            "takes over, or imitates, an existing Isthmus account. Ask an admin to rename or "
            "delete that account, or to give you another name at the identity provider.",
            409,
        ) from exc
    return user
