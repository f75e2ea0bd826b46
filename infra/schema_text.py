"""Whether two schema texts are the same schema: what the schema sync and the engine's schema
gate both compare by, with the standard library alone (the engine's executors have no more)."""

from __future__ import annotations

import json


def same_schema(one: str, other: str) -> bool:
    """Whether two schema texts are the same schema (JSON ones compared as JSON)."""
    if one == other:
        return True
    try:
        return bool(json.loads(one) == json.loads(other))
    except ValueError:
        return False
