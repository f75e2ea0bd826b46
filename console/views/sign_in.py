"""Signing in and out of the console, each in the audit trail (failed logins are audited where
they are refused: console.login_throttle): with a local account, or through the identity
provider (single sign-on, OpenID Connect's authorization code flow with PKCE, by Authlib)."""

import requests
from authlib.integrations.django_client import OAuth, OAuthError
from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from console.access import CHOOSING_PASSWORD, public
from replication.core.errors import ReplicationError
from replication.governance import audit, single_sign_on, users

NEXT = "sign_on_next"


class SignInForm(AuthenticationForm):
    """Django's login form, refusing a user name longer than any account's before it is tried:
    Django sets the form field's length after making it, so the field alone does not, and the
    failed attempt would be recorded with a name longer than its column (PostgreSQL refuses)."""

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        field = self.fields["username"]
        limit = field.max_length if isinstance(field, forms.CharField) else None
        if limit and len(username) > limit:
            raise ValidationError(
                f"A user name has at most {limit} characters; check what you typed.",
                code="max_length",
            )
        return username


class SignIn(auth_views.LoginView):
    authentication_form = SignInForm

    def get_context_data(self, **kwargs):
        found = single_sign_on.provider()
        return {**super().get_context_data(**kwargs), "sign_on": found.name if found else ""}

    def form_valid(self, form):
        response = super().form_valid(form)  # signed in from here: the actor is the user
        audit.record(audit.Actor.from_request(self.request), "account.login", "console")
        if users.must_choose_password(self.request.user):
            self.request.session[CHOOSING_PASSWORD] = True
            return redirect("account-password")
        return response


class SignOut(auth_views.LogoutView):
    def post(self, request, *args, **kwargs):
        if request.user.is_authenticated:  # the actor, before the session ends
            audit.record(audit.Actor.from_request(request), "account.logout", "console")
        return super().post(request, *args, **kwargs)


def _provider() -> single_sign_on.Provider:
    found = single_sign_on.provider()
    if found is None:
        raise Http404("Single sign-on is not set up here; sign in with your Isthmus account.")
    return found


def _client(found: single_sign_on.Provider):
    """Authlib's client of the provider, from its discovery document (read when first used)."""
    return OAuth().register(
        "provider",
        client_id=found.client_id,
        client_secret=found.client_secret,
        server_metadata_url=found.discovery_url,
        client_kwargs={"scope": found.scope, "code_challenge_method": "S256"},
    )


def _refused(request, message: str):
    audit.refused(audit.Actor.from_request(request), "account.login", "console", message)
    messages.error(request, message)
    return redirect("login")


@public
def sign_on(request):
    """Off to the identity provider; it sends the browser back to `sign_on_done`."""
    found = _provider()
    wanted = request.GET.get("next", "")
    if url_has_allowed_host_and_scheme(wanted, {request.get_host()}, request.is_secure()):
        request.session[NEXT] = wanted
    back = request.build_absolute_uri(reverse("sign-on-done"))
    try:
        return _client(found).authorize_redirect(request, back)
    except requests.RequestException as exc:
        return _refused(request, f"{found.name} at {found.issuer} did not answer ({exc}).")


@public
def sign_on_done(request):
    """Back from the provider: its answer checked, the user signed in with the role their
    groups give (or refused, saying why)."""
    found = _provider()
    try:
        token = _client(found).authorize_access_token(request)
    except OAuthError as exc:
        why = exc.description or exc.error
        return _refused(request, f"{found.name} did not sign you in: {why}. Try again.")
    except requests.RequestException as exc:
        return _refused(request, f"{found.name} at {found.issuer} did not answer ({exc}).")
    try:
        user = single_sign_on.sign_in(
            found, token.get("userinfo") or {}, audit.Actor.from_request(request)
        )
    except ReplicationError as exc:
        messages.error(request, str(exc))
        return redirect("login")
    wanted = request.session.pop(NEXT, "")
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect(wanted or "dashboard")
