"""The routes of the URL confs, as the tests that check them against the policy, the OpenAPI
document, the role matrix and the malformed-input and layout walks read them; and the world of
objects the console's routes are walked with (the `world` fixture)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from django.urls import URLPattern, get_resolver

from console.api import urls as api_urls
from replication.models import (
    ApiToken,
    ApprovalRequest,
    ClusterLink,
    Gateway,
    KafkaCluster,
    MergeFlow,
    MirrorTopic,
    ScenarioRun,
    Verification,
)
from replication.scenarios import runner


def api_routes() -> dict[tuple[str, str], str]:
    """(path, METHOD) -> access-policy action for each route of console/api/urls.py, its
    parameters spelt {name} as in the OpenAPI document."""
    found = {}
    for pattern in api_urls.urlpatterns:
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
        for method, action in pattern.callback.access_actions.items():
            found[(path, method)] = action
    return found


def console_routes() -> list[URLPattern]:
    """Each route of console/urls.py; the API's (under kafka/) has its own walk in
    test_api_openapi."""
    return [entry for entry in get_resolver().url_patterns if isinstance(entry, URLPattern)]


def params(route: URLPattern) -> list[str]:
    return re.findall(r"<(?:\w+:)?(\w+)>", str(route.pattern))


def url(route: URLPattern, values: dict[str, str], raw: dict[str, str] | None = None) -> str:
    """The route's path with `values` (quoted) and `raw` (as given: a broken %-escape)."""

    def value(match: re.Match) -> str:
        name = match[1]
        return (raw or {}).get(name) or quote(values[name], safe="")

    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", value, str(route.pattern))


@dataclass
class World:
    link: ClusterLink
    mirror: MirrorTopic
    request: ApprovalRequest
    token: ApiToken
    new_topic: str  # a source topic no mirror follows yet
    destination: KafkaCluster
    run: ScenarioRun  # a scenario run waiting for its first step
    verification: Verification  # of the mirror, asked for and not run
    flow: MergeFlow  # a merge flow of the link
    gateway: Gateway  # routing to the destination, may route to the source; its proxy stopped

    def values(self, route: URLPattern) -> dict[str, str]:
        """Valid values of the route's parameters: the objects of the world."""
        pattern = str(route.pattern)
        names = {
            "clusters/": self.destination.name,
            "scenarios/": "share-data",
            "gateways/": self.gateway.name,
        }
        pks = {"account/": self.token.pk, "scenarios/": self.run.pk}
        if "/verifications/" in pattern:
            pks = {"mirrors/": self.verification.pk}
        return {
            "destination": self.destination.name,
            "name": next((v for k, v in names.items() if pattern.startswith(k)), self.link.name),
            "topic": self.mirror.mirror_topic,
            "pk": str(next((v for k, v in pks.items() if pattern.startswith(k)), self.request.pk)),
            "username": "victim",
            "flow": self.flow.name,
            "how": runner.NEXT,
            "action": "pause" if "/switch/" in pattern else "failover",
            "cluster": "source",  # where the gateway may switch to
        }
