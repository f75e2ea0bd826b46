"""Personal API tokens: made and revoked on the user's own page, stored only as a digest."""

from django.test import Client

from replication.models import ApiToken, AuditEvent


def make_token(client, name="laptop CLI") -> str:
    response = client.post("/account/", {"name": name}, follow=True)
    assert response.redirect_chain == [("/account/", 302)]
    return response.context["secret"]


def test_a_user_makes_a_token_that_is_shown_once_and_stored_hashed(client_as, users):
    client = client_as("viewer")
    secret = make_token(client)

    assert secret.startswith("isthmus_") and len(secret) > 40
    token = ApiToken.objects.get(user=users["viewer"])
    assert secret not in (token.digest, token.prefix) and secret.startswith(token.prefix)
    page = client.get("/account/").content.decode()  # shown once: not on the next visit
    assert "laptop CLI" in page and token.prefix in page
    assert secret not in page
    event = AuditEvent.objects.get(action="token.create")
    assert (event.actor, event.result) == (users["viewer"], "ok")
    assert secret not in str(event.after)


def test_a_token_acts_with_its_owners_roles(client_as, users):
    secret = make_token(client_as("viewer"))
    caller = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert caller.get("/kafka/v3/clusters").status_code == 200
    refused = caller.post(
        "/kafka/v3/clusters/any/links?link_name=x", data="{}", content_type="application/json"
    )
    assert refused.status_code == 403
    assert refused.json() == {
        "error_code": 40301,
        "message": "Your role does not allow link.manage (viewer).",
    }
    assert ApiToken.objects.get().last_used_at is not None


def test_a_revoked_token_is_refused_and_the_revocation_audited(client_as, users):
    client = client_as("operator")
    secret = make_token(client)
    token = ApiToken.objects.get()
    assert client.get(f"/account/tokens/{token.pk}/revoke/").status_code == 200  # confirmation
    client.post(f"/account/tokens/{token.pk}/revoke/")

    assert not ApiToken.objects.exists()
    response = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/kafka/v3/clusters")
    assert response.status_code == 401
    assert AuditEvent.objects.filter(action="token.revoke", actor=users["operator"]).exists()


def test_nobody_can_revoke_someone_elses_token(client_as, users):
    make_token(client_as("admin"))
    token = ApiToken.objects.get()
    other = client_as("operator")
    assert other.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_token_names_are_required_and_unique_per_user(client_as):
    client = client_as("viewer")
    make_token(client, "ci")
    response = client.post("/account/", {"name": "ci"})
    assert "already have a token named" in response.content.decode()
    assert response.context["secret"] is None
    assert ApiToken.objects.count() == 1
