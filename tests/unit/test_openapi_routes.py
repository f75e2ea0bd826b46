"""The OpenAPI document against the routes it is built from (console/api/openapi.py): every
route has its words in OPERATIONS and every entry there a route, and each operation names the
action its view's `@endpoint` checks. No cluster, no database: the document is built on import."""

from __future__ import annotations

from console.api import openapi, urls
from tests.url_routes import api_routes


def route_keys() -> set[str]:
    """'METHOD name' of every route's methods, as OPERATIONS keys them."""
    return {
        f"{method} {route.name.removeprefix('api-')}"
        for route in urls.urlpatterns
        for method in route.callback.access_actions
    }


def test_every_route_has_its_words_and_every_entry_a_route():
    described = set(openapi.OPERATIONS)
    assert sorted(route_keys() - described) == [], "routes with no entry in OPERATIONS"
    assert sorted(described - route_keys()) == [], "entries in OPERATIONS for no route"


def test_each_operation_needs_the_action_its_endpoint_checks():
    documented = {
        (path, method.upper()): operation["x-isthmus-action"]
        for path, item in openapi.SPEC["paths"].items()
        for method, operation in item.items()
        if method != "parameters"
    }
    assert documented == api_routes()


def test_every_operation_has_an_id_of_its_own():
    ids = [
        operation["operationId"]
        for item in openapi.SPEC["paths"].values()
        for method, operation in item.items()
        if method != "parameters"
    ]
    assert "" not in ids, "the stub of an operation with no entry in OPERATIONS"
    assert len(ids) == len(set(ids))
