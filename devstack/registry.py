"""The embedded stack's schema registries, one per cluster: AxonOps Schema Registry (Go,
Apache-2.0), which speaks Confluent Schema Registry's REST API and keeps the ids and versions it
is given in IMPORT mode (what schema linking needs: records carry their schema's id). `make
setup` builds it from the Go module proxy at the version `devstack/go/go.mod` pins, into
.cache/bin. It listens on 127.0.0.1 only, without authentication, and keeps schemas in memory:
a restart of the stack empties it."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

from .kafka import ROOT, port

BINARY = ROOT / ".cache" / "bin" / "schema-registry"


@dataclass(frozen=True)
class Registry:
    cluster: str  # the cluster whose schemas it holds
    port: int

    @property
    def name(self) -> str:
        return f"{self.cluster}-registry"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


SOURCE = Registry("source", port(8081))
DESTINATION = Registry("destination", port(8082))
REGISTRIES = (SOURCE, DESTINATION)


def of(cluster: str) -> Registry:
    """The registry of the embedded cluster named `cluster`."""
    return next(r for r in REGISTRIES if r.cluster == cluster)


def command() -> list[str]:
    if not BINARY.exists():
        raise FileNotFoundError(
            f"{BINARY} is missing: 'make setup' builds the schema registry (it needs Go)."
        )
    return [str(BINARY)]


def env(registry: Registry) -> dict[str, str]:
    return {
        "SCHEMA_REGISTRY_HOST": "127.0.0.1",
        "SCHEMA_REGISTRY_PORT": str(registry.port),
        "SCHEMA_REGISTRY_STORAGE_TYPE": "memory",
    }


def ready(registry: Registry) -> bool:
    """It answers Confluent's API: the list of subjects (`null` while there are none)."""
    with urllib.request.urlopen(f"{registry.url}/subjects", timeout=2) as resp:  # noqa: S310
        json.loads(resp.read())
        return resp.status == 200
