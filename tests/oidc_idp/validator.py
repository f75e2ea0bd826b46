from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    """ID tokens carry the user's name, e-mail and groups, as an organisation's provider does."""

    oidc_claim_scope = None  # every claim below, whatever scopes were asked for

    def get_additional_claims(self, request):
        user = request.user
        return {
            "preferred_username": user.username,
            "email": user.email,
            "groups": sorted(g.name for g in user.groups.all()),
        }
