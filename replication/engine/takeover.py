"""Which host runs the engine, when hosts share the database and Redis but not their files: the
supervisor of the host that started it (the supervision record's `host`) keeps it, from its pid
file there; the supervisor of any other host starts it only once nothing has been heard of it
for ENGINE_TAKEOVER_S, neither a heartbeat nor a start (START_GRACE_S more for a start not
heard from yet), and never while its heartbeat from another host is fresh. The supervisors
decide one at a time, under their Redis lock (`supervise.supervise_engine`). The engine an
absent host may still run is fenced off by the slots' epochs: see docs/deployment.md.

On a single host, every record and heartbeat names this host, and nothing here changes what the
supervisor does.
"""

from __future__ import annotations

from django.conf import settings

from replication.engine import process
from spark_jobs import control

START_GRACE_S = 30.0  # beyond ENGINE_TAKEOVER_S, for an engine started and not heard from yet


def owner(record: process.Supervision) -> str:
    """The host that started the engine last (this one when no host is recorded: an engine
    started before hosts were recorded ran on the only host there was)."""
    return record.get("host") or settings.HOST_NAME


def wait_reason(record: process.Supervision, heartbeat: control.EngineHeartbeat, now: float) -> str:
    """Why this host must not start the engine now: it runs, or starts, on another host as far
    as anyone knows. Empty when this host may start it."""
    elsewhere = process.runs_on(heartbeat, now)
    if elsewhere:
        age = now - heartbeat.get("at_ms", 0) / 1000
        return f"it runs on host {elsewhere} (pid {heartbeat.get('pid')}), heard {age:.0f} s ago"
    started_by = owner(record)
    if started_by == settings.HOST_NAME:
        return ""
    started = record.get("started", 0)
    start_age = now - started
    # A start not heard from yet is given longer: Spark's JVMs and the driver take seconds
    # before the first beat (30 s on a 2-core machine under heavy load), and taking over a
    # starting engine would only start another.
    heard = heartbeat.get("at_ms", 0) / 1000 >= started
    if start_age < settings.ENGINE_TAKEOVER_S + (0 if heard else START_GRACE_S):
        return f"host {started_by} started it {start_age:.0f} s ago"
    return ""


def silent_for(heartbeat: control.EngineHeartbeat, now: float) -> str:
    """How long nothing was heard of the engine, in words, for the log of a takeover."""
    if not heartbeat.get("at_ms"):
        return "no heartbeat of it is known"
    where = f" on host {heartbeat['host']}" if heartbeat.get("host") else ""
    return f"its last heartbeat{where} is {now - heartbeat['at_ms'] / 1000:.0f} s old"
