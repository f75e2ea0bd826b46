"""Who a verified ID token makes here: the role its groups map to (the strongest), again at
every sign-in; never a local account; refused, and audited, without a mapped group. Only the
database is needed (the browser test runs the whole protocol against a real provider)."""

from __future__ import annotations

import pytest

from replication.core.errors import ReplicationError
from replication.governance import audit, single_sign_on
from replication.governance.users import role_of
from replication.models import AuditEvent, ExternalIdentity

pytestmark = [pytest.mark.db, pytest.mark.django_db]

PROVIDER = single_sign_on.Provider(
    "Corp IdP",
    "https://idp.example.com",
    "isthmus",
    "s",
    "groups",
    {"kafka-admins": "admin", "kafka-ops": "operator", "kafka-approvers": "approver"},
)
AT = audit.Actor(address="10.0.0.9")


def _claims(sub: str = "u-1", name: str = "carol", groups=("kafka-ops",)) -> dict:
    return {"sub": sub, "preferred_username": name, "groups": list(groups)}


def test_the_strongest_mapped_role_is_given_and_follows_the_groups_at_each_sign_in():
    user = single_sign_on.sign_in(PROVIDER, _claims(groups=["kafka-ops", "kafka-approvers"]), AT)
    assert role_of(user) == "approver"  # the stronger of operator and approver
    again = single_sign_on.sign_in(PROVIDER, _claims(groups=["kafka-ops", "other"]), AT)
    assert again.pk == user.pk and role_of(again) == "operator"
    assert not again.has_usable_password()


def test_no_mapped_group_is_refused_in_words_and_audited():
    with pytest.raises(ReplicationError, match=r"None of your groups at Corp IdP \(sales\)"):
        single_sign_on.sign_in(PROVIDER, _claims(groups=["sales"]), AT)
    refused = AuditEvent.objects.get(action="account.login")
    assert (refused.result, refused.actor_name) == ("refused", "carol (single sign-on)")


def test_the_provider_never_takes_over_a_local_account_of_the_same_name(users):
    with pytest.raises(ReplicationError, match="never takes over, or imitates"):
        single_sign_on.sign_in(PROVIDER, _claims(name="admin", groups=["kafka-admins"]), AT)
    assert not ExternalIdentity.objects.exists()
    assert users["admin"].has_usable_password()  # the local account is as it was


def test_a_user_disabled_here_stays_out_whatever_the_provider_says():
    user = single_sign_on.sign_in(PROVIDER, _claims(), AT)
    user.is_active = False
    user.save()
    with pytest.raises(ReplicationError, match="disabled in Isthmus"):
        single_sign_on.sign_in(PROVIDER, _claims(), AT)


@pytest.mark.parametrize(
    "name,said",
    [
        ("Admin", "A user named 'Admin' exists already"),  # case alone
        ("\u0430dmin", "looks like existing user 'admin'"),  # Cyrillic а
        ("adm\u0456n", "looks like existing user 'admin'"),  # Ukrainian і
        ("car ol\u202e", "control characters"),
    ],
)
def test_a_provider_name_that_collides_or_looks_like_an_existing_user_is_refused(users, name, said):
    """The checks local names get: the audit trail and approvers could not tell the two
    apart."""
    with pytest.raises(ReplicationError, match="cannot be used here") as refused:
        single_sign_on.sign_in(PROVIDER, _claims(name=name, groups=["kafka-admins"]), AT)
    assert said in str(refused.value)
    assert not ExternalIdentity.objects.exists()
    event = AuditEvent.objects.get(action="account.login")
    assert event.result == "refused"


def test_two_provider_users_whose_names_differ_in_case_alone_are_not_both_made():
    single_sign_on.sign_in(PROVIDER, _claims(sub="u-1", name="dave"), AT)
    with pytest.raises(ReplicationError, match="exists already"):
        single_sign_on.sign_in(PROVIDER, _claims(sub="u-2", name="DAVE"), AT)
    assert ExternalIdentity.objects.count() == 1
