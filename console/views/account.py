"""The signed-in user's own page: roles and personal API tokens."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache

from console.access import require, roles_of
from console.forms.account import TokenForm
from console.views.actions import bound, confirm
from replication import audit
from replication.errors import ReplicationError
from replication.tokens import create_token, revoke_token

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
