"""Console users: made, given a role, disabled and enabled, given new passwords by admins, and
choosing their own.

A password an admin hands over (a new user's, or a reset one) is one-time: whoever signs in
with it chooses their own first (`must_choose_password`, `choose_password`).

A user has exactly one role (one of the role groups, see `policy.ROLES`). There must stay at
least one active admin: the checks for that lock the admins' rows, so two admins demoting or
disabling each other at the same moment cannot both succeed.
"""

from __future__ import annotations

import secrets
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from confusable_homoglyphs.confusables import confusables_data
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import CharField, Count, Model, Q, QuerySet

from replication.core.errors import FieldProblems, ReplicationError, conflict, not_found
from replication.core.text import plain
from replication.governance import audit, policy
from replication.models import OneTimePassword

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ADMIN = "admin"
LAST_ADMIN = "There must stay at least one active admin; make someone else an admin first."


@dataclass(frozen=True)
class UserRow:
    """One line of the users page."""

    user: User
    role: str
    active: bool
    tokens: int  # revoked tokens are deleted, so every stored one is live


def role_of(user: User) -> str:
    """The user's one role ("" if none). A superuser counts as an admin, as in `policy`; a
    user with several role groups (made outside the console) shows the strongest."""
    if user.is_superuser:
        return ADMIN
    names = {group.name for group in user.groups.all()}
    return next((role for role in reversed(policy.ROLES) if role in names), "")


def snapshot(user: User) -> dict:
    """What the audit trail keeps of a user: never a password."""
    return {"username": user.get_username(), "role": role_of(user), "active": user.is_active}


def list_users() -> list[UserRow]:
    users = (
        get_user_model()
        .objects.annotate(token_count=Count("api_tokens"))
        .prefetch_related("groups")
        .order_by("username")
    )
    return [UserRow(u, role_of(u), u.is_active, u.token_count) for u in users]


def get_user(username: str) -> User:
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist as exc:
        raise not_found(f"There is no user named {username!r}.") from exc


def create_user(actor: audit.Actor, username: str, role: str, email: str = "") -> tuple[User, str]:
    """Make an active user with `role`; return it and its one-time password, which is stored
    only as a hash and must be handed over now."""
    target = f"user {username[:200]}"  # an overlong name is refused, but still audited
    with audit.refusals(actor, "user.create", target):
        _may_manage(actor)
        _check_username(username)
        _check_role(role)
        email = email.strip()
        if email:
            limit = _max_length(get_user_model(), "email")
            try:
                if len(email) > limit:
                    raise ValidationError("too long")
                validate_email(email)
            except ValidationError as exc:
                raise FieldProblems.one(
                    "email",
                    f"{email[:limit]!r} is not a valid email address (at most {limit} characters).",
                ) from exc
        password = _new_password()
        try:
            with transaction.atomic():
                claim_name(username)
                user = get_user_model().objects.create_user(username, email, password)
                user.groups.add(_group(role))
                OneTimePassword.objects.create(user=user)
                audit.record(actor, "user.create", target, after=snapshot(user), in_change=True)
        except IntegrityError as exc:  # made by someone else a moment ago
            raise _taken(username) from exc
    return user, password


def set_role(actor: audit.Actor, user: User, role: str) -> User:
    """Give `user` exactly `role` in place of the role they had."""
    target = f"user {user.get_username()}"
    with audit.refusals(actor, "user.role", target), transaction.atomic():
        _check_role(role)
        user = _lock(user)
        _may_manage(actor)
        before = snapshot(user)
        if before["role"] == role:
            return user  # nothing changes, so nothing to record
        if before["role"] == ADMIN:
            if _is_self(actor, user):
                raise ReplicationError(
                    "You cannot take the admin role from yourself; another admin can.", 403
                )
            _keep_an_admin(user)
        user.groups.remove(*Group.objects.filter(name__in=policy.ROLES))
        user.groups.add(_group(role))
        if user.is_superuser and role != ADMIN:
            # `policy` gives a superuser every role: left set, the new role would be a lie.
            user.is_superuser = False
            user.save(update_fields=["is_superuser"])
        audit.record(
            actor, "user.role", target, before=before, after=snapshot(user), in_change=True
        )
    return user


def disable(actor: audit.Actor, user: User) -> User:
    """Stop `user` from signing in: their sessions end and their API tokens are refused
    (`tokens.authenticate`) until they are enabled again."""
    return _set_active(actor, user, False)


def enable(actor: audit.Actor, user: User) -> User:
    return _set_active(actor, user, True)


def _set_active(actor: audit.Actor, user: User, active: bool) -> User:
    action = "user.enable" if active else "user.disable"
    target = f"user {user.get_username()}"
    with audit.refusals(actor, action, target), transaction.atomic():
        user = _lock(user)
        _may_manage(actor)
        if user.is_active == active:
            return user  # nothing changes, so nothing to record
        if not active:
            if _is_self(actor, user):
                raise ReplicationError("You cannot disable yourself; another admin can.", 403)
            if role_of(user) == ADMIN:
                _keep_an_admin(user)
        before = snapshot(user)
        user.is_active = active
        user.save(update_fields=["is_active"])
        audit.record(actor, action, target, before=before, after=snapshot(user), in_change=True)
    return user


def reset_password(actor: audit.Actor, user: User) -> tuple[User, str]:
    """Give `user` a new one-time password; the old one stops working and, since Django ties
    sessions to the password, so do their sessions."""
    target = f"user {user.get_username()}"
    with audit.refusals(actor, "user.password", target), transaction.atomic():
        user = _lock(user)
        _may_manage(actor)
        password = _new_password()
        user.set_password(password)
        user.save(update_fields=["password"])
        OneTimePassword.objects.update_or_create(user=user)
        audit.record(
            actor,
            "user.password",
            target,
            before=snapshot(user),  # the same after: only the password, never recorded, changed
            after=snapshot(user),
            message="Set a new one-time password.",
            in_change=True,
        )
    return user, password


def delete_user(actor: audit.Actor, user: User) -> None:
    """Delete `user`: their API tokens go with them; the audit trail keeps their name on every
    event, and a request they asked for that still waits can no longer be approved."""
    target = f"user {user.get_username()}"
    with audit.refusals(actor, "user.delete", target), transaction.atomic():
        user = _lock(user)
        _may_manage(actor)
        if _is_self(actor, user):
            raise ReplicationError("You cannot delete yourself; another admin can.", 403)
        if user.is_active and role_of(user) == ADMIN:
            _keep_an_admin(user)
        before = snapshot(user)
        user.delete()
        audit.record(actor, "user.delete", target, before=before, in_change=True)


def must_choose_password(user: User) -> bool:
    """Whether `user`'s password is one an admin handed over, not one they chose."""
    return OneTimePassword.objects.filter(user=user).exists()


def choose_password(actor: audit.Actor, user: User, old: str, new: str) -> User:
    """`user` replaces their password (`old`, checked again here) with one of their own; Django's
    password validators judge it. Their other sessions end with the old password."""
    target = f"user {user.get_username()}"
    with audit.refusals(actor, "user.password", target), transaction.atomic():
        user = _lock(user)
        if not _is_self(actor, user):
            raise ReplicationError("Only the user themselves may choose their password.", 403)
        if not user.check_password(old):
            raise FieldProblems.one("old_password", "That is not your current password.")
        if new == old:
            raise FieldProblems.one("new_password", "Choose a password other than the current one.")
        try:
            validate_password(new, user)
        except ValidationError as exc:
            raise FieldProblems.one("new_password", " ".join(exc.messages)) from exc
        user.set_password(new)
        user.save(update_fields=["password"])
        OneTimePassword.objects.filter(user=user).delete()
        audit.record(
            actor,
            "user.password",
            target,
            message="Chose their own password.",
            in_change=True,
        )
    return user


# Rules. -------------------------------------------------------------------------------------


def _may_manage(actor: audit.Actor) -> None:
    # The console checks this at its door already; checked here too so that no other caller
    # (API, CLI) can forget it, and after `_lock`, so an admin demoted a moment ago by another
    # admin is refused. System actors (management commands) have no user.
    if actor.user is None:
        return
    current = get_user_model().objects.filter(pk=actor.user.pk).first()  # not a stale copy
    if not policy.can(current, "user.manage"):
        raise ReplicationError("Only an admin may manage users.", 403)


def claim_name(username: str) -> None:
    """Refuse a new account's name (FieldProblems) that is not a valid username or that is, or
    looks like, an existing user's. Inside the transaction that makes the account: it locks
    the admins, which serializes it with any other change of users, so two names that look
    alike cannot both be made at the same moment."""
    _check_username(username)
    list(_active_admins().select_for_update().order_by("pk").values_list("pk", flat=True))
    _check_name_is_free(username)


def _max_length(model: type[Model], name: str) -> int:
    """How long a text column of `model` may be."""
    field = model._meta.get_field(name)
    assert isinstance(field, CharField) and field.max_length is not None  # a text column
    return field.max_length


def _check_username(username: str) -> None:
    model = get_user_model()
    validator = model.username_validator  # anchored: the whole name must match
    limit = _max_length(model, model.USERNAME_FIELD)
    try:
        plain(username, "username")
    except ReplicationError as exc:
        raise FieldProblems.one("username", str(exc)) from None
    invalid = FieldProblems.one(
        "username",
        f"Invalid username {_echo(username, limit)}: use 1-{limit} letters, digits and "
        "@ . + - _ only (no spaces).",
    )
    if not username or len(username) > limit:
        raise invalid
    try:
        validator(username)
    except ValidationError as exc:
        raise invalid from exc


def _taken(username: str) -> FieldProblems:
    return FieldProblems.one(
        "username", f"A user named {username!r} exists already; pick another name.", 409
    )


def _check_name_is_free(username: str) -> None:
    """Refuse a name that is, or looks like, an existing user's: the same once case is
    ignored ('Alice', 'alice'), or the same to the eye (Cyrillic 'е' for Latin 'e', '0' for
    'O'), which the people reading the audit trail and approving requests could not tell
    apart."""
    keys = lookalike_keys(username)
    for existing in get_user_model().objects.values_list("username", flat=True).iterator():
        if _folded(existing) == _folded(username):
            raise _taken(username)
        if lookalike_keys(existing) & keys:
            raise FieldProblems.one(
                "username",
                f"{_echo(username)} looks like existing user {existing!r}; pick a name that "
                "cannot be mistaken for it.",
                409,
            )


def _folded(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold()


def lookalike_keys(name: str) -> frozenset[str]:
    """What `name` looks like, as two keys: its Unicode confusable skeleton (UTS #39) once
    normalised (NFKC) and case-folded, which catches 'viеwer' (Cyrillic е) and 'VIEWER' for
    'viewer'; and its skeleton with case kept, since case folding first would miss the
    look-alikes that differ in case ('Ian' for 'lan': a capital I looks like a small L).
    Two names look alike when they share a key."""
    normal = unicodedata.normalize("NFKC", name)
    return frozenset({"folded:" + skeleton(normal.casefold()), "cased:" + skeleton(normal)})


def skeleton(text: str) -> str:
    """UTS #39's skeleton: each character replaced by the prototype of the characters it may
    be confused with (NFD before and after)."""
    mapped = "".join(_prototype(c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def _prototype(character: str) -> str:
    return _prototypes().get(character, character)


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's stand-in, from the confusable_homoglyphs package's copy of
    Unicode's confusables.txt. The package keeps each source-to-prototype pair in both
    directions, so the pairs are grouped back into sets of characters that look alike (each
    set one prototype and what maps to it); a set's stand-in is its prototype when that is a
    sequence ('rn' for 'm'), else its lowest character: names are only compared with each
    other, so any one member does."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    # The file's right-to-left characters come wrapped in left-to-right marks for display.
    def bare(s: str) -> str:
        return s.replace("\u200e", "").replace("\u200f", "")

    for source, glyphs in confusables_data.items():
        for glyph in glyphs:
            a, b = root(bare(source)), root(bare(glyph["c"]))
            if a != b:
                parent[max(a, b, key=_stand_in_rank)] = min(a, b, key=_stand_in_rank)
    single = {c: root(c) for c in parent if len(c) == 1 and len(root(c)) == 1}
    # A sequence's own letters get their sets' stand-ins too, as they do in a name typed
    # letter by letter: 'm' must come out as 'rn' typed does.
    sequence = {
        c: "".join(single.get(x, x) for x in root(c))
        for c in parent
        if len(c) == 1 and len(root(c)) > 1
    }
    return {c: to for c, to in {**single, **sequence}.items() if to != c}


def _stand_in_rank(s: str) -> tuple[int, str]:
    # A sequence first (it is its set's prototype), then the lowest code point.
    return (0 if len(s) > 1 else 1, s)


def _check_role(role: str) -> None:
    if role not in policy.ROLES:
        raise ReplicationError(
            f"Unknown role {_echo(role)}; the roles are {', '.join(policy.ROLES)}."
        )


def _echo(value: str, limit: int = 60) -> str:
    """`value` quoted for a refusal, cut short when long: a message need not repeat the
    100,000 characters it refuses."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"


def _is_self(actor: audit.Actor, user: User) -> bool:
    return actor.user is not None and actor.user.pk == user.pk


def _active_admins() -> QuerySet:
    model = get_user_model()
    # A subquery, not a join: FOR UPDATE then locks user rows only, and needs no DISTINCT.
    admin_ids = model.groups.through.objects.filter(group__name=ADMIN).values("user_id")
    return model.objects.filter(Q(is_superuser=True) | Q(pk__in=admin_ids), is_active=True)


def _lock(user: User) -> User:
    """`user` read afresh and locked for this transaction, after the active admins.

    Locking every active admin first (always in the same order) makes the last-admin check
    safe: a second demotion or disabling waits here for the first to commit, and its own
    count then sees it. On SQLite, IMMEDIATE transactions serialize writers anyway.
    """
    list(_active_admins().select_for_update().order_by("pk").values_list("pk", flat=True))
    return get_user_model().objects.select_for_update().get(pk=user.pk)


def _keep_an_admin(user: User) -> None:
    """Refuse when `user` is the last active admin (call after `_lock`)."""
    if not _active_admins().exclude(pk=user.pk).exists():
        raise conflict(LAST_ADMIN)


def _group(role: str) -> Group:
    return Group.objects.get_or_create(name=role)[0]


def _new_password() -> str:
    return secrets.token_urlsafe(12)  # 96 random bits, as `setup_demo` gives the first admin
