"""Admins manage users: make them, set their role, disable and enable them, reset their
passwords. The rules (one role each, at least one active admin) live in
`replication.governance.users`."""

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache

from console.access import require
from console.forms.users import RoleForm, UserForm
from console.views.actions import confirm
from replication.core.errors import FieldProblems, ReplicationError
from replication.governance import audit, users

NEW_PASSWORD_KEY = "new_user_password"  # noqa: S105 (a session key)


def _find(username: str):
    try:
        return users.get_user(username)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def _list(request, form: UserForm):
    return render(request, "users/list.html", {"rows": users.list_users(), "form": form})


def _detail(request, person, *, role_form: RoleForm | None = None, error: str = "", password=""):
    return render(
        request,
        "users/detail.html",
        {
            "person": person,  # not `user`: templates know the signed-in admin by that name
            "role": users.role_of(person),
            "tokens": person.api_tokens.count(),
            "role_form": role_form or RoleForm(initial={"role": users.role_of(person)}),
            "error": error,
            "password": password,
            "is_me": person.pk == request.user.pk,
        },
    )


def _show_password_once(request, person, password: str):
    # The password rides in the session to the page after the redirect, once (as a new API
    # token does), so reloading that page neither shows it again nor makes another.
    request.session[NEW_PASSWORD_KEY] = {"username": person.get_username(), "password": password}
    return redirect("user-detail", person.get_username())


@require("user.manage")
def user_list(request):
    return _list(request, UserForm())


@require("user.manage")
def user_create(request):
    if request.method != "POST":
        # users/new/ hides the page of a user named "new" (made outside the console, say)
        return user_detail(request, "new")
    form = UserForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            person, password = users.create_user(
                audit.Actor.from_request(request), data["username"], data["role"], data["email"]
            )
        except FieldProblems as exc:  # each under its field
            for field, problem in exc.problems.items():
                form.add_error(field, problem)
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Made user {person.get_username()} ({data['role']}).")
            return _show_password_once(request, person, password)
    return _list(request, form)


@require("user.manage")
@never_cache  # the page that shows a new password must not stay in the browser's cache
def user_detail(request, username):
    person = _find(username)
    password = ""
    shown = request.session.get(NEW_PASSWORD_KEY) or {}
    if shown.get("username") == username:  # another user's page leaves it for its own page
        password = request.session.pop(NEW_PASSWORD_KEY)["password"]
    return _detail(request, person, password=password)


@require("user.manage")
def user_role(request, username):
    person = _find(username)
    if request.method != "POST":
        return redirect("user-detail", username)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            person = users.set_role(
                audit.Actor.from_request(request), person, form.cleaned_data["role"]
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            return _done(request, username, f"{username} is now {users.role_of(person)}.")
    return _detail(request, person, role_form=form)


def _act(request, username: str, operation, then):
    """POST runs `operation(actor, user)` and answers `then(its result)`; a refusal shows the
    page again with the reason."""
    person = _find(username)
    if request.method != "POST":
        return redirect("user-detail", username)
    try:
        result = operation(audit.Actor.from_request(request), person)
    except ReplicationError as exc:
        return _detail(request, person, error=str(exc))
    return then(result)


def _done(request, username: str, message: str):
    messages.success(request, message)
    return redirect("user-detail", username)


@require("user.manage")
def user_disable(request, username):
    return _act(
        request,
        username,
        users.disable,
        lambda _: _done(
            request,
            username,
            f"Disabled {username}: they cannot sign in and their API tokens are refused.",
        ),
    )


@require("user.manage")
def user_enable(request, username):
    return _act(
        request,
        username,
        users.enable,
        lambda _: _done(request, username, f"Enabled {username} again."),
    )


@require("user.manage")
def user_delete(request, username):
    person = _find(username)
    return confirm(
        request,
        question=f"Delete user {username}?",
        verb="delete",
        explanation=(
            "This cannot be undone. Their API tokens are deleted with them; the audit trail "
            "keeps their name on everything they did; a request they asked for that still "
            "waits can no longer be approved. To keep them out for a while, disable them "
            "instead."
        ),
        run=lambda actor: users.delete_user(actor, person),
        done=f"Deleted user {username}.",
        back_url=reverse("user-detail", args=[username]),
        after_url=reverse("users"),
        typed=username,
    )


@require("user.manage")
def user_password(request, username):
    def show(result):
        person, password = result
        if person.pk == request.user.pk:
            # A new password ends the user's sessions; an admin resetting their own keeps this.
            update_session_auth_hash(request, person)
        messages.success(request, f"Made a new password for {username}; the old one stops working.")
        return _show_password_once(request, person, password)

    return _act(request, username, users.reset_password, show)
