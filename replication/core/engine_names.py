"""Which engine is which: an engine's id in Redis (one per database of links and engine name)
and whether a name is the engine this process keeps. The engine's files, keys and supervision
are `replication/engine/process.py`'s; a cluster of another network zone, reached through its
keeper, is `replication/kafka/zone_calls.py`'s."""

from __future__ import annotations

import hashlib

from django.conf import settings


def engine_id(owner: str | None = None, name: str | None = None) -> str:
    """This process's engine (or that of the console whose database is `owner`): one per
    database of links, so a test run beside `make demo` has its own, and within it one per
    engine name (`name`; default this process's, settings.ENGINE_NAME; "" the deployment's
    own engine)."""
    name = settings.ENGINE_NAME if name is None else name
    owner = owner or owner_of_links()
    return hashlib.sha256((f"{owner}\n{name}" if name else owner).encode()).hexdigest()[:12]


def is_ours(name: str | None) -> bool:
    """Whether the engine named `name` (None: this process's) is the one this process keeps."""
    return name is None or name == settings.ENGINE_NAME


def owner_of_links() -> str:
    """The database of links this process serves, which names its engines."""
    return str(settings.DATABASES["default"]["NAME"])
