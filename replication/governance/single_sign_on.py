"""Single sign-on with OpenID Connect: the console signs people in through the organisation's
identity provider (ISTHMUS_OIDC_*), and gives each the Isthmus role their provider groups map
to (ISTHMUS_OIDC_ROLES), again at every sign-in, so a group taken away at the provider takes the
role away here at the next sign-in. Local accounts stay for break-glass: a provider's user never
becomes one of them, even with the same name.

The console's view does the protocol (authorization code with PKCE, the ID token's signature,
issuer, audience and nonce checked by Authlib, asking for ISTHMUS_OIDC_SCOPES); this module
decides who that is here: the name from ISTHMUS_OIDC_USERNAME_CLAIM, the groups from
ISTHMUS_OIDC_GROUPS_CLAIM. docs/single-sign-on.md is the guide."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
    groups_claim: str  # a claim's name, or a dotted path into nested claims (realm_access.roles)
    roles: dict[str, str]  # the provider's group -> an Isthmus role
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    username_claim: str = "preferred_username"

    @property
    def scope(self) -> str:
        """The scopes as the authorization request names them."""
        return " ".join(self.scopes)

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
        tuple(settings.OIDC_SCOPES),
        settings.OIDC_USERNAME_CLAIM,
    )


def claim(claims: dict, name: str) -> Any:
    """The claim `name`, or None. A name with dots that no claim has is a path into nested
    claims (Keycloak's `realm_access.roles`); a claim named with dots (Auth0's namespaced
    `https://example.com/groups`) is taken whole first."""
    if name in claims:
        return claims[name]
    found: Any = claims
    for part in name.split("."):
        if not isinstance(found, dict) or part not in found:
            return None
        found = found[part]
    return found


def groups_of(found: Provider, claims: dict) -> list[str]:
    """The provider's groups in the ID token: a list, or one group as a string."""
    value = claim(claims, found.groups_claim)
    if value is None or value == "":
        return []
    return [str(g) for g in value] if isinstance(value, list) else [str(value)]


def name_of(found: Provider, claims: dict) -> str:
    """The user's name here: the username claim, else the e-mail, else the subject."""
    value = claim(claims, found.username_claim)
    named = value if isinstance(value, str) and value.strip() else None
    return str(named or claims.get("email") or claims.get("sub", ""))[:150]


def identity(user) -> ExternalIdentity | None:
    """How `user` signs in through the provider, or None for a local account."""
    return ExternalIdentity.objects.filter(user=user).first()


def role_for(groups: list[str], roles: dict[str, str]) -> str:
    """The strongest role the groups map to ("" if none): a user has one role here."""
    mapped = {roles[g] for g in groups if g in roles}
    return next((role for role in reversed(policy.ROLES) if role in mapped), "")


def sign_in(found: Provider, claims: dict, actor: audit.Actor) -> User:
    """The console user a verified ID token (its `claims`) names: made at the first sign-in,
    its role set from the provider's groups each time. Refused (and audited) when no group
    maps to a role, or when the name is a local account's."""
    subject = str(claims.get("sub", ""))
    name = name_of(found, claims)
    groups = groups_of(found, claims)
    who = audit.Actor(name=f"{name} (single sign-on)", address=actor.address)
    with audit.refusals(who, "account.login", "console"):
        if not subject:
            raise ReplicationError("The identity provider's answer names nobody (no 'sub').")
        role = role_for(groups, found.roles)
        if not role:
            raise ReplicationError(_no_role(found, groups), 403)
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


def _no_role(found: Provider, groups: list[str]) -> str:
    if not groups:  # most often the claim is not in the ID token at all: say where to look
        return (
            f"{found.name} sent no groups in the ID token's {found.groups_claim!r} claim, so no "
            "Isthmus role can be given and you cannot sign in. Ask an admin to check that the "
            "provider puts your groups in that claim (ISTHMUS_OIDC_GROUPS_CLAIM), for the scopes "
            f"asked for ({found.scope}: ISTHMUS_OIDC_SCOPES)."
        )
    shown = ", ".join(groups[:20])
    return (
        f"None of your groups at {found.name} ({shown}) gives an Isthmus role, so you "
        "cannot sign in. Ask an admin to map one of them (ISTHMUS_OIDC_ROLES), or to "
        "add you to a mapped group."
    )


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
