"""The leader of one of the devstack's two hosts (devstack/hosts.py): a process in a session and
process group of its own, which starts each of the host's parts when asked, in its group, so
that one `kill -9 -<its pid>` kills the whole host (and the engine its worker starts, which
joins the group too).

    python -m devstack.host_leader <orders folder>

`hosts.start_part` writes an order (a JSON file: the command, its environment, pid file, log
file and folder) into the folder; the leader starts it (`processes.start`, in its own session)
and removes the order. Without Django: it only starts processes and reaps those that end.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from infra import processes

ROUND_S = 0.1


def _carry_out(order: Path) -> None:
    try:
        wanted = json.loads(order.read_text())
        cmd, env, pidfile = wanted["cmd"], wanted["env"], Path(wanted["pidfile"])
        logfile, cwd = Path(wanted["logfile"]), Path(wanted["cwd"])
    except (OSError, ValueError, KeyError, TypeError):
        return  # taken back, or not an order: the one who placed it waits in vain and says so
    finally:
        order.unlink(missing_ok=True)
    try:
        processes.start(cmd, pidfile=pidfile, logfile=logfile, env=env, cwd=cwd, own_session=False)
    except OSError as exc:
        pidfile.with_suffix(".failed").write_text(f"{cmd[0]}: {exc.strerror}")


def _reap() -> None:
    """The host's parts are this process's children: an ended one is reaped, not left a
    zombie (which `processes` would count as ended anyway)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def main(orders: Path) -> None:
    orders.mkdir(parents=True, exist_ok=True)
    while True:
        for order in sorted(orders.glob("*.json")):
            _carry_out(order)
        _reap()
        time.sleep(ROUND_S)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
