"""Which host starts the engine when hosts share the database and Redis (replication/engine/
takeover.py): the one that started it keeps it; another starts it only after ENGINE_TAKEOVER_S
without a heartbeat or a start, and never while a fresh heartbeat says it runs elsewhere. The
processes killed and replaced: tests/ha/test_engine_takeover.py."""

from __future__ import annotations

import pytest

from replication.engine import process, supervise, takeover

NOW = 1_000_000.0


@pytest.fixture(autouse=True)
def _host_b(settings):
    settings.HOST_NAME, settings.ENGINE_TAKEOVER_S = "host-b", 15.0


def beat(host: str | None, age: float, state: str = "running") -> dict:
    heartbeat = {"at_ms": int((NOW - age) * 1000), "pid": 4242, "state": state}
    return heartbeat if host is None else {**heartbeat, "host": host}


def test_a_single_host_supervises_as_before():
    # Nothing names another host: an engine started before hosts were recorded, or this one's.
    assert takeover.owner({"started": NOW - 100}) == "host-b"
    assert takeover.wait_reason({"started": NOW - 1}, beat(None, 0), NOW) == ""
    assert takeover.wait_reason({"host": "host-b"}, beat("host-b", 0), NOW) == ""
    assert process.runs_on(beat("host-b", 0), NOW) is None


def test_a_fresh_heartbeat_from_another_host_keeps_the_engine_there():
    started_long_ago = {"host": "host-a", "started": NOW - 600}
    why = takeover.wait_reason(started_long_ago, beat("host-a", 14.9), NOW)
    assert why == "it runs on host host-a (pid 4242), heard 15 s ago"
    # Even when the record names this host (Redis lost what the other host wrote).
    assert takeover.wait_reason({"host": "host-b"}, beat("host-a", 2), NOW)
    assert process.runs_on(beat("host-a", 2, "starting"), NOW) == "host-a"


def test_another_host_starts_it_once_it_was_silent_for_the_takeover_time():
    record = {"host": "host-a", "started": NOW - 600}
    assert takeover.wait_reason(record, beat("host-a", 15), NOW) == ""
    assert takeover.wait_reason(record, {}, NOW) == ""  # Redis lost its heartbeat too
    # An engine that stopped or failed on host A beats no more.
    assert takeover.wait_reason(record, beat("host-a", 1, "failed"), NOW) == ""
    assert "15 s old" in takeover.silent_for(beat("host-a", 15), NOW)


def test_an_engine_just_started_elsewhere_is_given_the_takeover_time_and_its_start_to_beat():
    record = {"host": "host-a", "started": NOW - 5}
    assert takeover.wait_reason(record, {}, NOW) == "host host-a started it 5 s ago"
    # Not heard from since its start: Spark may still be starting.
    assert takeover.wait_reason({**record, "started": NOW - 44.9}, {}, NOW)
    assert takeover.wait_reason({**record, "started": NOW - 45}, {}, NOW) == ""
    assert takeover.wait_reason({**record, "started": NOW - 30}, beat("host-a", 40), NOW)
    # Heard from, then silent: the takeover time alone.
    assert takeover.wait_reason({**record, "started": NOW - 16}, beat("host-a", 15), NOW) == ""


def test_an_engine_taken_over_waits_out_the_tasks_of_the_one_before(settings, tmp_path):
    # Started by another host, the old engine's tasks may still run there: no fresh start.
    settings.STREAM_DIR = tmp_path  # no folder of the engine here
    assert supervise._nothing_left({"host": "host-a", "started": NOW, "pid": 1}) is False
    assert supervise._nothing_left({"host": "host-b", "started": NOW, "pid": 1}) is True


class Written(dict):
    """What the supervisor writes to Redis, kept."""

    def set(self, key: str, value: str) -> None:
        self[key] = value


def test_an_engine_that_fails_once_starts_again_at_once_then_after_a_pause():
    record: process.Supervision = {"failures": 0}
    assert supervise._note_failure(Written(), record, "killed", NOW)  # type: ignore[arg-type]
    assert record["retry_at"] == NOW  # a healthy engine's death: every second is lag
    assert supervise._note_failure(Written(), record, "killed", NOW)  # type: ignore[arg-type]
    assert record["retry_at"] == NOW + 10
