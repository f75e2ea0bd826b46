import json

import pytest

pytestmark = pytest.mark.e2e


def test_a_user_makes_a_token_sees_it_once_uses_it_and_revokes_it(login, live_server, users):
    page = login("viewer")
    page.get_by_role("link", name="viewer").click()
    page.fill("#id_name", "laptop CLI")
    page.get_by_role("button", name="Make token").click()
    secret = page.locator("#new-token").inner_text().strip()
    assert secret.startswith("isthmus_")

    # The token works against the API, with the viewer's role.
    answer = page.request.get(
        f"{live_server.url}/kafka/v3/clusters", headers={"Authorization": f"Bearer {secret}"}
    )
    assert answer.status == 200 and json.loads(answer.body())["kind"] == "KafkaClusterList"

    page.reload()  # shown once: the page again shows the name, not the token
    assert page.locator("#new-token").count() == 0
    assert secret not in page.content()
    row = page.locator("tr", has_text="laptop CLI")
    row.get_by_role("link", name="Revoke").click()
    page.get_by_role("button", name="Yes, revoke it").click()
    assert "Revoked API token 'laptop CLI'" in page.get_by_role("status").inner_text()
    assert page.locator("tr", has_text="laptop CLI").count() == 0
    refused = page.request.get(
        f"{live_server.url}/kafka/v3/clusters", headers={"Authorization": f"Bearer {secret}"}
    )
    assert refused.status == 401
