"""Clients shared by everything in one process that reaches a cluster with the same settings
(address and credentials): the engine's per-destination clients and per-source watches, a
slot's admin clients and its consumers (`source_readers`). Settings that differ get clients of
their own, so a wrong password or a stopped cluster holds up only those who use it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Client = TypeVar("Client")


def config_key(config: dict[str, str]) -> str:
    """Equal for equal settings, credentials included."""
    return json.dumps(config, sort_keys=True)


class Shared(Generic[Client]):
    """One client for each set of settings, made by `make` when first asked for."""

    def __init__(self, make: Callable[[dict[str, str]], Client]):
        self._make = make
        self._made: dict[str, Client] = {}
        self._lock = threading.Lock()

    def get(self, config: dict[str, str]) -> Client:
        key = config_key(config)
        with self._lock:
            if key not in self._made:
                self._made[key] = self._make(config)
            return self._made[key]

    def all(self) -> list[Client]:
        with self._lock:
            return list(self._made.values())
