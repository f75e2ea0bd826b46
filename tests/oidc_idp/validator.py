from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    """ID tokens carry the user's name, e-mail and groups, as an organisation's provider does:
    the groups only when the `groups` scope is asked for (as Okta and others do), both as a
    `groups` list and nested, as Keycloak puts realm roles (`realm_access.roles`)."""

    oidc_claim_scope = {
        **OAuth2Validator.oidc_claim_scope,
        "groups": "groups",
        "realm_access": "groups",
    }

    def get_additional_claims(self, request):
        user = request.user
        groups = sorted(g.name for g in user.groups.all())
        return {
            "preferred_username": user.username,
            "email": user.email,
            "groups": groups,
            "realm_access": {"roles": groups},
        }
