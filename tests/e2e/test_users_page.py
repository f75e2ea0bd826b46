import pytest

pytestmark = pytest.mark.e2e


def test_an_operator_made_by_an_admin_signs_in_once_with_the_given_password_then_chooses_hers(
    login, live_server, users
):
    page = login("admin")
    page.get_by_role("link", name="Users").click()
    page.fill("#id_username", "olivia")
    page.select_option("#id_role", "operator")
    page.get_by_role("button", name="Add user").click()
    assert "Made user olivia (operator)." in page.get_by_role("status").inner_text()
    assert "will not be shown again" in page.locator(".secret-once").inner_text()
    password = page.locator("#new-password").inner_text().strip()
    assert len(password) >= 16
    # One click copies it.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.locator(".secret-once").get_by_role("button", name="Copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == password
    assert page.locator("#role").inner_text() == "operator"

    page.get_by_role("button", name="Log out").click()
    page.goto(f"{live_server.url}/clusters/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    # The one-time password opens only the page where she chooses her own.
    page.wait_for_url(f"{live_server.url}/account/password/")
    assert "only this page opens" in page.locator("#one-time").inner_text()
    page.goto(f"{live_server.url}/links/")
    page.wait_for_url(f"{live_server.url}/account/password/")
    page.fill("#id_old_password", password)
    page.fill("#id_new_password", "olivias-own-passphrase")
    page.fill("#id_new_password_again", "olivias-own-passphrase")
    page.get_by_role("button", name="Save my password").click()
    page.wait_for_url(f"{live_server.url}/")
    assert "Your password is now the one you chose." in page.get_by_role("status").inner_text()
    assert page.get_by_role("link", name="olivia").is_visible()
    assert page.get_by_role("link", name="Links", exact=True).is_visible()
    assert page.get_by_role("link", name="Users").count() == 0
