"""The signed-in user's own page: roles and personal API tokens."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from console.access import require, roles_of
from console.forms import TokenForm
from console.views.actions import confirm
from replication import audit
from replication.errors import ReplicationError
from replication.tokens import create_token, revoke_token


@require("token.manage")
def account(request):
    form = TokenForm(request.POST or None)
    secret = None
    if request.method == "POST" and form.is_valid():
        try:
            token, secret = create_token(
                audit.Actor.from_request(request), request.user, form.cleaned_data["name"]
            )
        except ReplicationError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Made API token {token.name!r}. Copy it now.")
            form = TokenForm()
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
    token = get_object_or_404(request.user.api_tokens, pk=pk)
    return confirm(
        request,
        question=f"Revoke API token {token.name!r}?",
        explanation="Calls made with it are refused from now on. This cannot be undone.",
        run=lambda actor, _force: revoke_token(actor, token),
        done=f"Revoked API token {token.name!r}.",
        back_url=reverse("account"),
    )
