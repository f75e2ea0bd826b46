"""The embedded stack's two schema registries, for the tests that use them, and schemas of a
test's own (a registry gives a schema it already holds the id it has, so tests that share the
registries must not share schemas)."""

from __future__ import annotations

import json
import uuid

from devstack import registry
from infra.schema_registry import SchemaRegistry

SOURCE, DESTINATION = SchemaRegistry(registry.SOURCE.url), SchemaRegistry(registry.DESTINATION.url)


def unique_name() -> str:
    return f"itest-{uuid.uuid4().hex[:10]}"


def optional_ints(space: str, record: str, *fields: str) -> str:
    """An Avro record of optional ints in the namespace `space` (a name of the test's own):
    each version with one field more stays backward compatible."""
    listed = [{"name": f, "type": ["null", "int"], "default": None} for f in fields]
    namespace = "t_" + space.replace("-", "_").replace(".", "_")
    return json.dumps({"type": "record", "name": record, "namespace": namespace, "fields": listed})
