"""Admin clients are kept per config and reused, and dropped when idle, failed or too many."""

from __future__ import annotations

import pytest

from replication.kafka import connections


@pytest.fixture(autouse=True)
def _no_clients_kept():
    connections._clients.clear()
    yield
    connections._clients.clear()


def _config(port: int = 1, **more: str) -> dict[str, str]:
    # Nothing listens there; a client is made without connecting first.
    return {"bootstrap.servers": f"127.0.0.1:{port}", **more}


def test_one_config_gets_one_client_and_another_config_its_own():
    first = connections.connect(_config())
    assert connections.connect(_config()) is first
    assert connections.connect(_config(**{"client.id": "other"})) is not first
    assert connections.connect(_config(port=2)) is not first


def test_a_client_whose_request_failed_is_not_reused():
    first = connections.connect(_config())
    first.failed = True  # as KafkaAdmin._fail leaves it
    assert connections.connect(_config()) is not first


def test_an_idle_client_is_dropped(monkeypatch):
    first = connections.connect(_config())
    monkeypatch.setattr(connections, "IDLE_S", -1)
    assert connections.connect(_config()) is not first


def test_past_the_limit_the_least_recently_used_client_is_dropped(monkeypatch):
    monkeypatch.setattr(connections, "MAX_CLIENTS", 2)
    oldest = connections.connect(_config(port=1))
    kept = connections.connect(_config(port=2))
    connections.connect(_config(port=2))  # used again: now the newest
    connections.connect(_config(port=3))
    assert len(connections._clients) == 2
    assert connections.connect(_config(port=2)) is kept
    assert connections.connect(_config(port=1)) is not oldest
