import os
import re

import pytest
from playwright.sync_api import expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
# The machine has no network but the package registries: keep Chromium from calling home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def browser():
    # Playwright's sync API runs an event loop; Django's ORM must be allowed beside it.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def login(page, live_server, users):
    def as_role(role: str):
        page.goto(f"{live_server.url}/clusters/")
        page.fill("#id_username", role)
        page.fill("#id_password", f"{role}-password-1")
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/clusters/")
        return page

    return as_role


def screenshot(page, name: str) -> None:
    """Keep what the page looks like now, as a test artifact: var/screenshots/<name>.png (the
    README's pictures in docs/ are copies of these)."""
    from django.conf import settings

    folder = settings.VAR_DIR / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def screenshots(page, name: str) -> None:
    """`screenshot` at a desktop's width and at a phone's (`<name>-phone`): the docs show
    both. The page is left at a desktop's width."""
    screenshot(page, name)
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, f"{name}-phone")
    page.set_viewport_size({"width": 1280, "height": 720})


def signed_in(browser, url: str, role: str):
    """A browser context of its own, signed in as `role`; returns (context, page)."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{url}/login/")
    page.fill("#id_username", role)
    page.fill("#id_password", f"{role}-password-1")
    page.click("button[type=submit]")
    return context, page


def approve_as_approver(browser, url: str, reason: str) -> None:
    """In a browser of their own, the approver logs in, opens the one pending request, sees
    its reason and approves it."""
    context, approver = signed_in(browser, url, "approver")
    expect(approver.locator("#pending-approvals")).to_have_text("1")
    approver.get_by_role("link", name=re.compile("Approvals")).click()
    approver.locator("tr[data-request] a").first.click()
    expect(approver.get_by_text(reason)).to_be_visible()
    approver.locator("#approve").click()
    context.close()


@pytest.fixture(scope="session")
def identity_provider(live_server, tmp_path_factory):
    """A real OpenID Connect provider (django-oauth-toolkit, tests/oidc_idp) in a process of its
    own, whose client `isthmus` may send browsers back to the console under test. Users: alice
    (group kafka-approvers) and bob (group marketing). Yields its issuer URL."""
    import socket
    import subprocess
    import sys

    import requests

    from infra.processes import wait_for
    from tests.conftest import stop_process

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tmp_path_factory.mktemp("idp")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.oidc_idp.run",
            str(port),
            f"{live_server.url}/login/sso/done/",
            "alice:alice-at-the-provider-1:kafka-approvers",
            "bob:bob-at-the-provider-1:marketing",
        ],
        env={**os.environ, "IDP_DIR": str(folder)},
        stdout=(folder / "idp.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    issuer = f"http://127.0.0.1:{port}/o"

    def answers() -> bool:
        try:
            return requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2).ok
        except requests.RequestException:
            return False

    try:
        assert wait_for(answers, 60), (folder / "idp.log").read_text()
        yield issuer
    finally:
        stop_process(proc)
