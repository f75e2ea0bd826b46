"""Signing in and out of the console, each in the audit trail (failed logins are audited where
they are refused: console.login_throttle)."""

from django.contrib.auth import views as auth_views
from django.shortcuts import redirect

from console.access import CHOOSING_PASSWORD
from replication import audit, users


class SignIn(auth_views.LoginView):
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
