"""The embedded stack's schema registries, one per cluster: AxonOps Schema Registry (Go,
Apache-2.0), which speaks Confluent Schema Registry's REST API and keeps the ids and versions it
is given in IMPORT mode (what schema linking needs: records carry their schema's id). `make
setup` builds it from the Go module proxy at the version `devstack/go/go.mod` pins, into
.cache/bin. It listens on 127.0.0.1 only, without authentication. With ISTHMUS_DB=postgres it
keeps its schemas in the stack's PostgreSQL (a database of its own), so they outlive a restart;
else in memory, and a restart of the stack empties it."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

from infra import processes

from . import postgres as pg
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


def database(registry: Registry, postgres: dict) -> str:
    return f"{postgres['name']}_registry_{registry.cluster}"


def env(registry: Registry, postgres: dict | None = None) -> dict[str, str]:
    """Where it listens, and where it keeps its schemas: the stack's PostgreSQL if it has one
    (`postgres`: settings.DEVSTACK_POSTGRES), else memory."""
    listen = {"SCHEMA_REGISTRY_HOST": "127.0.0.1", "SCHEMA_REGISTRY_PORT": str(registry.port)}
    if postgres is None:
        return {**listen, "SCHEMA_REGISTRY_STORAGE_TYPE": "memory"}
    return {
        **listen,
        "SCHEMA_REGISTRY_STORAGE_TYPE": "postgresql",
        "SCHEMA_REGISTRY_PG_HOST": postgres["host"],
        "SCHEMA_REGISTRY_PG_PORT": str(postgres["port"]),
        "SCHEMA_REGISTRY_PG_DATABASE": database(registry, postgres),
        "SCHEMA_REGISTRY_PG_USER": postgres["user"],
        "SCHEMA_REGISTRY_PG_PASSWORD": postgres["password"],
        "SCHEMA_REGISTRY_PG_SSLMODE": "disable",  # 127.0.0.1 only
    }


def prepare(registry: Registry, postgres: dict | None) -> None:
    """Its database in the stack's PostgreSQL, made once (the role may create databases)."""
    if postgres is None:
        return
    import psycopg  # the postgres extra, installed with ISTHMUS_DB=postgres
    from psycopg import sql

    name = database(registry, postgres)
    # Started in the same `up` as the PostgreSQL part, which may still be starting.
    processes.wait_for(lambda: pg.ready(postgres["host"], postgres["port"]), 60, 0.5)
    try:
        _create_database(psycopg, sql, postgres, name)
    except psycopg.Error as exc:
        raise RuntimeError(
            f"the stack's PostgreSQL at {postgres['host']}:{postgres['port']} did not make "
            f"database {name}: {exc}. Start it first ('manage.py devstack up postgres')."
        ) from exc


def _create_database(psycopg, sql, postgres: dict, name: str) -> None:
    with psycopg.connect(
        host=postgres["host"],
        port=postgres["port"],
        user=postgres["user"],
        password=postgres["password"],
        dbname=postgres["name"],
        autocommit=True,
        connect_timeout=10,
    ) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            return
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def ready(registry: Registry) -> bool:
    """It answers Confluent's API: the list of subjects (`null` while there are none)."""
    with urllib.request.urlopen(f"{registry.url}/subjects", timeout=2) as resp:  # noqa: S310
        json.loads(resp.read())
        return resp.status == 200
