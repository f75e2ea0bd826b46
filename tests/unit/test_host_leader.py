"""A host's leader (devstack/host_leader.py) carries out the orders put in its folder: a part
started in its process group, or, for an order it cannot read, nothing, and it goes on."""

from __future__ import annotations

import json

from devstack import host_leader
from infra import processes


def test_an_order_it_cannot_read_is_dropped_and_a_good_one_is_started(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"cmd": ["sleep"')  # cut off
    host_leader._carry_out(bad)  # no exception: the leader's loop goes on
    assert not bad.exists()

    pidfile = tmp_path / "part.pid"
    good = tmp_path / "part.json"
    order = {"cmd": ["sleep", "600"], "env": {"PATH": "/usr/bin:/bin"}, "cwd": str(tmp_path)}
    good.write_text(json.dumps({**order, "pidfile": str(pidfile), "logfile": str(tmp_path / "l")}))
    host_leader._carry_out(good)
    try:
        assert not good.exists() and processes.read_pidfile(pidfile) is not None
    finally:
        processes.stop(pidfile, timeout=5)
