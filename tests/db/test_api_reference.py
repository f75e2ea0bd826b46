"""The API reference page: Swagger UI, as `make setup` unpacks it from npm, served by the
console itself and drawing the API's own OpenAPI document, for every role and nobody else; a
console installed without it says what to run instead of failing."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders

from console.access import ROLES

pytestmark = [pytest.mark.db, pytest.mark.django_db]


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_the_reference_drawn_from_the_consoles_own_files(client_as, role):
    client = client_as(role)
    page = client.get("/api/").content.decode()
    assert 'data-openapi-url="/kafka/v3/openapi.json"' in page
    scripts = re.findall(r'<(?:script src|link rel="stylesheet" href)="([^"]+)"', page)
    assert any("swagger-ui-bundle.js" in s for s in scripts), "run make setup (Swagger UI)"
    for asset in scripts:  # all the console's own: no CDN, nothing fetched at run time
        assert asset.startswith("/static/"), asset
        assert client.get(asset).status_code == 200, asset
    assert client.get("/kafka/v3/openapi.json").json()["info"]["title"] == "Isthmus API"


def test_the_account_page_links_to_it(client_as):
    page = client_as("viewer").get("/account/").content.decode()
    assert 'href="/api/" id="api-reference-link"' in page


def test_it_is_behind_sign_in(client):
    answer = client.get("/api/")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")


def test_without_swagger_ui_installed_it_says_to_run_make_setup(client_as, monkeypatch):
    monkeypatch.setattr(finders, "find", lambda path, **kwargs: None)
    answer = client_as("viewer").get("/api/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'id="api-reference-missing"' in page and "make setup" in page
    assert "swagger-ui-bundle.js" in page and '<script src="/static/vendor' not in page
