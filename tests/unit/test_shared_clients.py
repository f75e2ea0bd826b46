"""Clients shared by settings: links that reach a cluster alike share one, and a link whose
address or credentials differ gets its own (its trouble holds up only itself)."""

from __future__ import annotations

from spark_jobs.shared_clients import Shared

SOURCE = {"bootstrap.servers": "a:9092", "sasl.username": "alice", "sasl.password": "x"}


def test_equal_settings_share_one_client_made_once_and_other_credentials_get_their_own():
    made = []
    shared = Shared(lambda config: made.append(config) or object())

    first = shared.get(SOURCE)
    again = shared.get(dict(reversed(list(SOURCE.items()))))  # the same, in another order
    other = shared.get({**SOURCE, "sasl.password": "y"})

    assert first is again and other is not first
    assert made == [SOURCE, {**SOURCE, "sasl.password": "y"}]
    assert shared.all() == [first, other]
