"""Who a verified ID token makes here: the role its groups map to (the strongest), again at
every sign-in; never a local account; refused, and audited, without a mapped group. Only the
database is needed (the browser test runs the whole protocol against a real provider)."""

from __future__ import annotations

import dataclasses

import pytest

from console.views import sign_in
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


# The claims and scopes an organisation's provider is configured with. ------------------------


@pytest.mark.parametrize(
    "claim,claims",
    [
        # Keycloak's realm roles, reached by a dotted path
        ("realm_access.roles", {"realm_access": {"roles": ["kafka-admins"]}}),
        # Auth0's namespaced claim, whose name has dots of its own
        ("https://example.com/groups", {"https://example.com/groups": ["kafka-admins"]}),
        # one group as a string (Entra ID's single role claims, some SAML bridges)
        ("role", {"role": "kafka-admins"}),
    ],
)
def test_the_groups_are_read_from_the_claim_configured(claim, claims):
    found = dataclasses.replace(PROVIDER, groups_claim=claim)
    user = single_sign_on.sign_in(found, {"sub": "u-9", "preferred_username": "erin", **claims}, AT)
    assert role_of(user) == "admin"
    assert ExternalIdentity.objects.get(user=user).groups == ["kafka-admins"]


def test_the_name_comes_from_the_username_claim_configured_else_the_email():
    found = dataclasses.replace(PROVIDER, username_claim="upn")
    claims = {"sub": "u-3", "upn": "frank", "email": "f@example.com", "groups": ["kafka-ops"]}
    assert single_sign_on.sign_in(found, claims, AT).get_username() == "frank"
    without = {"sub": "u-4", "email": "gina@example.com", "groups": ["kafka-ops"]}
    assert single_sign_on.sign_in(found, without, AT).get_username() == "gina@example.com"


def test_no_groups_in_the_token_says_which_claim_and_scopes_to_check():
    found = dataclasses.replace(PROVIDER, scopes=("openid", "profile"))
    with pytest.raises(ReplicationError) as refused:
        single_sign_on.sign_in(found, {"sub": "u-5", "preferred_username": "hal"}, AT)
    said = str(refused.value)
    assert "sent no groups in the ID token's 'groups' claim" in said
    assert "(openid profile: ISTHMUS_OIDC_SCOPES)" in said


def test_the_settings_make_the_provider_and_its_scopes_reach_the_authorization_request(settings):
    settings.OIDC_ISSUER = "https://idp.example.com/realms/corp"
    settings.OIDC_SCOPES = ["openid", "groups"]
    settings.OIDC_GROUPS_CLAIM = "realm_access.roles"
    settings.OIDC_USERNAME_CLAIM = "email"
    found = single_sign_on.provider()
    assert found is not None
    assert (found.groups_claim, found.username_claim) == ("realm_access.roles", "email")
    assert sign_in._client(found).client_kwargs["scope"] == "openid groups"


def test_a_sign_on_user_is_told_on_the_account_page_to_make_a_token_for_the_tools(client):
    user = single_sign_on.sign_in(PROVIDER, _claims(groups=["kafka-ops"]), AT)
    client.force_login(user)
    page = client.get("/account/").content.decode()
    assert 'id="signed-on"' in page and "make an API token below" in page
    assert "kafka-ops" in page and 'id="change-password"' not in page
    made = client.post("/account/", {"name": "laptop CLI"}, follow=True)
    assert "Copy this token now" in made.content.decode()
