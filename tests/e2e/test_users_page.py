import pytest

pytestmark = pytest.mark.e2e


def test_an_admin_makes_an_operator_who_signs_in_with_the_one_time_password(
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
    assert page.locator("#role").inner_text() == "operator"

    page.get_by_role("button", name="Log out").click()
    page.goto(f"{live_server.url}/clusters/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/clusters/")
    assert page.get_by_role("link", name="olivia").is_visible()
    assert page.get_by_role("link", name="Links").is_visible()
    assert page.get_by_role("link", name="Users").count() == 0
