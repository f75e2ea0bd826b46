from django.urls import URLPattern, URLResolver, get_resolver

from console.access import POLICY, ROLES, can


def all_patterns(resolver=None, prefix=""):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from all_patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


def guarded(view) -> bool:
    """A page names one action (or "public"); an API view one per HTTP method."""
    per_method = getattr(view, "access_actions", None)
    if per_method:
        return set(per_method.values()) <= set(POLICY)
    return getattr(view, "access_action", None) in {"public"} | set(POLICY)


def test_every_url_goes_through_the_access_policy():
    unguarded = [route for route, view in all_patterns() if not guarded(view)]
    assert unguarded == []


def test_only_signing_in_and_out_and_healthz_are_public():
    public = sorted(
        route for route, view in all_patterns() if getattr(view, "access_action", None) == "public"
    )
    assert public == ["healthz", "login/", "login/sso/", "login/sso/done/", "logout/"]


def test_roles_decide_actions(users):
    assert all(can(users[role], "console.view") for role in ROLES)
    assert [role for role in ROLES if can(users[role], "cluster.register")] == ["admin"]
    # operators ask for link deletion, promote and failover; approvals decide when they run
    for action in ("link.manage", "mirror.manage", "link.delete", "mirror.stop"):
        assert [role for role in ROLES if can(users[role], action)] == ["operator", "admin"]
    assert [role for role in ROLES if can(users[role], "request.approve")] == ["approver", "admin"]
    for action in ("mirror.delete", "request.override", "approval_policy.manage", "user.manage"):
        assert [role for role in ROLES if can(users[role], action)] == ["admin"]


def test_a_user_without_a_role_can_do_nothing(db, django_user_model):
    nobody = django_user_model.objects.create_user("nobody", password="x-password-1")
    assert not any(can(nobody, action) for action in POLICY)


def test_anonymous_users_are_sent_to_login(client, db):
    response = client.get("/clusters/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/clusters/")


def test_an_expired_session_during_an_htmx_poll_redirects_the_whole_page(client, db):
    response = client.get(
        "/clusters/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/clusters/"
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/clusters/"


def test_csrf_is_enforced(db, users):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    response = client.post("/clusters/new/", {"name": "x", "bootstrap_servers": "h:1"})
    assert response.status_code == 403
    assert b"CSRF verification failed" in response.content
