"""The beat's lease on a real Redis (replication/engine/beat.py): of two beats, the one holding
it sends, the other stands by; a beat whose lease was taken steps down at its next tick; one
that stops hands it on at once, one that dies after LEASE_S. Two real beat processes killed and
replaced: tests/ha/test_beat_lease.py."""

from __future__ import annotations

import json
import logging
import os
import time

import pytest

from replication.core import redis_channel
from replication.engine import beat

pytestmark = pytest.mark.usefixtures("light_stack")


class Schedulers:
    """Beats' schedulers, in this process (told apart by their leases' tokens)."""

    def __init__(self, folder):
        self.folder, self.open = folder, []

    def make(self) -> beat.LeasedScheduler:
        from console.celery import app

        made = beat.LeasedScheduler(
            app=app, schedule_filename=str(self.folder / f"s{len(self.open)}-{time.monotonic_ns()}")
        )
        self.open.append(made)
        return made

    def close(self, scheduler: beat.LeasedScheduler) -> None:
        self.open.remove(scheduler)
        scheduler.close()


@pytest.fixture
def schedulers(tmp_path):
    made = Schedulers(tmp_path)
    yield made
    for scheduler in list(made.open):
        made.close(scheduler)
    redis_channel.client().delete(f"isthmus:{beat.lease_name()}")


def test_one_beat_holds_the_lease_and_the_other_stands_by(schedulers, settings, caplog):
    settings.HOST_NAME = "host-a"
    caplog.set_level(logging.INFO, logger="replication.engine.beat")
    first, second = schedulers.make(), schedulers.make()
    assert first.hold_lease()
    assert not second.hold_lease()
    assert second.tick() == beat.TICK_S  # sends nothing: it only looks again a tick later
    assert first.hold_lease() and not second.hold_lease()  # renewed, still standing by
    active = beat.active()
    assert active is not None and (active["host"], active["pid"]) == ("host-a", os.getpid())
    assert beat.health() == {
        "ok": True,
        "host": "host-a",
        "pid": os.getpid(),
        "since": active["since"],
    }
    said = [r.getMessage() for r in caplog.records if r.name == beat.__name__]
    assert said == [
        f"This beat (host host-a, pid {os.getpid()}) is now the active one: it sends the "
        "scheduled tasks",
        f"This beat stands by: host host-a, pid {os.getpid()} is the active one",
    ]


def test_a_beat_whose_lease_was_taken_steps_down_at_once(schedulers, caplog):
    holder = schedulers.make()
    assert holder.hold_lease()
    # Another beat holds it now (a Redis failover lost the key, and that beat took it first).
    other = {"host": "host-b", "pid": 4242, "since": time.time(), "token": "t"}
    redis_channel.client().set(f"isthmus:{beat.lease_name()}", json.dumps(other), px=6000)
    assert holder.tick() == beat.TICK_S  # nothing sent
    assert holder.lease is None
    assert "This beat steps down: host host-b, pid 4242 took the lease" in caplog.text


def test_a_stopping_beat_hands_the_lease_on_and_a_dead_one_loses_it(schedulers, monkeypatch):
    first, second = schedulers.make(), schedulers.make()
    assert first.hold_lease()
    schedulers.close(first)
    assert beat.active() is None
    assert second.hold_lease()  # at its next tick, not after the lease's time
    monkeypatch.setattr(beat, "LEASE_S", 0.5)
    assert second.hold_lease()  # renewed for 0.5 s; then it dies, ticking no more
    third = schedulers.make()
    assert not third.hold_lease()
    time.sleep(0.6)
    assert third.hold_lease()


def test_nobody_holding_the_lease_is_a_health_problem_and_a_metric(schedulers, db):
    from replication.overview import metrics

    assert beat.health()["ok"] is False
    assert 'isthmus_beat_active{host=""} 0' in metrics.prometheus_text()
    assert schedulers.make().hold_lease()
    assert f'isthmus_beat_active{{host="{beat.active()["host"]}"}} 1' in metrics.prometheus_text()


def test_a_role_is_given_up_only_by_its_holder(light_stack):
    name = "tests:role"
    try:
        assert redis_channel.claim(name, "me", 5)
        assert not redis_channel.claim(name, "you", 5)
        redis_channel.give_up(name, "you")
        assert redis_channel.holder(name) == "me"
        redis_channel.give_up(name, "me")
        assert redis_channel.holder(name) is None
        assert redis_channel.claim(name, "you", 5)
    finally:
        redis_channel.client().delete(f"isthmus:{name}")


def test_only_the_active_beat_looks_at_the_engine_itself_until_it_stops(schedulers, monkeypatch):
    """Its own look, beside the workers' supervision: after a host's death the survivors'
    workers took a minute to run tasks again, the beat seconds (tests/ha/test_host_drills.py)."""
    from replication.engine import supervise

    looked = []
    monkeypatch.setattr(beat, "WATCH_S", 0.1)
    monkeypatch.setattr(supervise, "watch_engine", lambda: looked.append(time.monotonic()))
    monkeypatch.setattr(beat.PersistentScheduler, "tick", lambda *_, **__: 1.0)  # sends nothing
    active, standby = schedulers.make(), schedulers.make()
    active.tick()
    standby.tick()
    time.sleep(0.5)
    assert len(looked) >= 3
    assert standby.watcher is None  # it never held the lease
    schedulers.close(active)
    time.sleep(0.2)
    stopped = len(looked)
    time.sleep(0.3)
    assert len(looked) == stopped and not active.watcher.is_alive()
