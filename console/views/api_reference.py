"""The API reference page: Swagger UI drawing the JSON API's own OpenAPI document
(/kafka/v3/openapi.json), for anyone signed in. Swagger UI's files are npm's package at the
version the Makefile pins, unpacked into console/static/vendor/ at setup and served from here:
the page reaches nothing outside the console."""

from __future__ import annotations

from django.contrib.staticfiles import finders
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from console.access import require

# Swagger UI's files as the Makefile unpacks them (`make setup`).
ASSETS = ("vendor/swagger-ui/swagger-ui-bundle.js", "vendor/swagger-ui/swagger-ui.css")


@require("console.view")
@require_GET
def api_reference(request):
    missing = [asset for asset in ASSETS if finders.find(asset) is None]
    return render(
        request,
        "account/api_reference.html",
        {"openapi_url": reverse("api-openapi"), "missing": missing},
    )
