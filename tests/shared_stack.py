"""The devstack parts test sessions share, up for as long as a session (or `make test`) needs
them, and stopped afterwards only if it started them (they may be a user's `make demo`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from devstack.stack import Stack

SHARED_PARTS = ["source", "destination", "source-registry", "destination-registry", "redis"]


# What the fast tier (`-m "not kafka"`) uses: its clusters are in memory.
FAST_TIER_PARTS = ["source-registry", "destination-registry", "redis"]


def parts_of(stack: Stack, fast_tier: bool = False) -> list[str]:
    """Every part the tests share (or, for the fast tier alone, what it uses): the clusters and
    their schema registries, Redis, and the PostgreSQL the test database is made on (with
    ISTHMUS_DB=postgres)."""
    database = ["postgres"] if stack.postgres else []
    return database + (FAST_TIER_PARTS if fast_tier else SHARED_PARTS)


@contextmanager
def shared_stack(stack: Stack, parts: list[str]) -> Iterator[Stack]:
    parts = stack.expand(parts)  # a cluster of three brokers is three parts
    already = {s.name for s in stack.status(parts) if s.pid}
    started = [name for name in parts if name not in already]
    try:
        stack.up(parts, echo=lambda _: None)
        yield stack
    finally:
        if started:
            stack.down(started, echo=lambda _: None)
