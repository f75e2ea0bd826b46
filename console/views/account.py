"""The signed-in user's own page: roles, personal API tokens, and a password of their own."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache

from console.access import CHOOSING_PASSWORD, require, roles_of, while_choosing_password
from console.forms.account import ChoosePasswordForm, TokenForm
from console.views.actions import bound, confirm
from replication.core.errors import FieldProblems, ReplicationError
from replication.governance import audit, notifications, single_sign_on, users
from replication.governance.tokens import create_token, revoke_token

NEW_TOKEN_KEY = "new_api_token"  # noqa: S105 (a session key)


@require("token.manage")
@never_cache  # the page that shows a new token must not stay in the browser's cache
def account(request):
    form = TokenForm(bound(request))
    # A new token's secret rides in the session to the page after the redirect, once.
    secret = request.session.pop(NEW_TOKEN_KEY, None)
    if request.method == "POST" and form.is_valid():
        try:
            token, secret = create_token(
                audit.Actor.from_request(request), request.user, form.cleaned_data["name"]
            )
        except ReplicationError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Made API token {token.name!r}. Copy it now.")
            request.session[NEW_TOKEN_KEY] = secret
            return redirect("account")
    return render(
        request,
        "account/detail.html",
        {
            "form": form,
            "secret": secret,
            "roles": sorted(roles_of(request.user)),
            "tokens": request.user.api_tokens.all(),
            "api_url": request.build_absolute_uri("/")[:-1],
            "signed_on": single_sign_on.identity(request.user),
        },
    )


@require("token.manage")
def token_revoke(request, pk):
    # Only the owner's own tokens: someone else's id is simply not found.
    token = request.user.api_tokens.filter(pk=pk).first()
    if token is None:
        raise Http404(f"You have no API token {pk}; your account page lists yours.")
    return confirm(
        request,
        question=f"Revoke API token {token.name!r}?",
        verb="revoke",
        explanation="Calls made with it are refused from now on. This cannot be undone.",
        run=lambda actor: revoke_token(actor, token),
        done=f"Revoked API token {token.name!r}.",
        back_url=reverse("account"),
    )


@require("token.manage")
@while_choosing_password
@never_cache
def account_password(request):
    """Choose a password of one's own: required first after signing in with a one-time one."""
    form = ChoosePasswordForm(bound(request))
    choosing = bool(request.session.get(CHOOSING_PASSWORD))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = users.choose_password(
                audit.Actor.from_request(request),
                request.user,
                data["old_password"],
                data["new_password"],
            )
        except FieldProblems as exc:  # each under its field
            for field, problem in exc.problems.items():
                form.add_error(field if field in form.fields else None, problem)
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            update_session_auth_hash(request, user)  # this session stays signed in
            request.session.pop(CHOOSING_PASSWORD, None)
            messages.success(request, "Your password is now the one you chose.")
            return redirect("dashboard" if choosing else "account")
    status = 400 if request.method == "POST" else 200
    return render(
        request, "account/password.html", {"form": form, "choosing": choosing}, status=status
    )


@require("console.view")
def notification_list(request):
    """What became of the user's requests, newest first; opening the page marks them read."""
    return render(
        request,
        "account/notifications.html",
        {
            "notifications": notifications.read_all(request.user),
            "webhook": bool(settings.NOTIFY_WEBHOOK_URL),
            "email": bool(settings.EMAIL_HOST and request.user.email),
        },
    )
