"""Why a mirror says "starting", in words, with how long it takes."""

from replication.engine.status import StreamStatus, not_copying_yet
from replication.models import ClusterLink


def _words(link_state: str = "ACTIVE", **stream) -> str:
    return not_copying_yet(ClusterLink(name="ab", state=link_state), StreamStatus(**stream))


def test_each_reason_a_mirror_is_not_copying_yet_is_said_with_how_long_it_takes():
    assert "engine (one Spark application for every link) is starting: about 6 s" in _words(
        state="STARTING"
    )
    assert "taking up this link" in _words(state="STARTING", pid=42)
    assert "supervisor starts it within 2 s" in _words(state="STOPPED")
    assert "reads this mirror for the first time" in _words(state="RUNNING", pid=42)
    restarting = _words(state="RESTARTING", failures=2, error="out of memory")
    assert "after 2 failures in a row (last error: out of memory)" in restarting
    assert "paused" in _words("PAUSED", state="RUNNING")
