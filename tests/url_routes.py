"""The routes of the URL confs, as the tests that check them against the policy, the OpenAPI
document and the role matrix read them."""

from __future__ import annotations

import re

from console.api import urls as api_urls


def api_routes() -> dict[tuple[str, str], str]:
    """(path, METHOD) -> access-policy action for each route of console/api/urls.py, its
    parameters spelt {name} as in the OpenAPI document."""
    found = {}
    for pattern in api_urls.urlpatterns:
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
        for method, action in pattern.callback.access_actions.items():
            found[(path, method)] = action
    return found
