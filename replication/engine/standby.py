"""The standby region (docs/deployment.md, "A standby region"): a second deployment whose
PostgreSQL is a streaming replica of the primary region's, with its own Redis, and whose
console, workers and beat start only once `promote` made its database the primary.

`promote` checks that this console's database is a standby, refuses while its primary still
answers (two primaries would each run an engine on the same mirrors) unless forced with a
reason, promotes it (`pg_promote()`), waits until it takes writes, and records who did it, from
which host and why. The engine's ownership needs nothing from the lost region: nothing in the
database names a host (the supervision record and the heartbeats are in each region's own
Redis), so this region's supervisor starts the engine at its first round; only a supervision
record this region's Redis kept from an earlier time it ran the engine (failures counted, a
pause) is cleared here, so it does not hold that start back.
"""

from __future__ import annotations

import getpass
import logging
import time
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import DatabaseError, connection

from replication.core import text
from replication.core.errors import ReplicationError, conflict, unavailable
from replication.core.redis_channel import client
from replication.engine import process
from replication.governance import audit
from spark_jobs import control

log = logging.getLogger(__name__)

PROMOTE_WAIT_S = 60
ANSWER_TIMEOUT_S = 3  # how long the primary is given to answer before it counts as gone
# What libpq and the system say when no server was reached at an address.
UNREACHED = (
    "Connection refused",
    "timeout expired",
    "No route to host",
    "Network is unreachable",
    "could not translate host name",
)


@dataclass(frozen=True)
class Promotion:
    database: str  # where this console's database is: host:port/name
    primary: str  # where its primary was: host:port, or "" when unknown
    primary_answered: bool
    took_s: float
    engine: str  # what this region's Redis says of the engine, in words


def database_address() -> str:
    db = settings.DATABASES["default"]
    return f"{db.get('HOST') or 'localhost'}:{db.get('PORT') or 5432}/{db['NAME']}"


def waiting_for_promotion() -> bool:
    """Whether this console's database is a standby not promoted yet: then this region's
    supervisor starts no engine (one beside the primary region's would copy the same mirrors,
    and nothing fences one region's engine from the other's)."""
    return connection.vendor == "postgresql" and in_recovery()


def in_recovery() -> bool:
    """Whether this console's database is a standby (PostgreSQL in recovery); refused for a
    database that cannot be one."""
    if connection.vendor != "postgresql":
        raise ReplicationError(
            f"This console's database is {connection.vendor} ({database_address()}): a standby "
            "region's database is a PostgreSQL streaming replica of the primary's. There is "
            "nothing to promote. Nothing was changed."
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        return bool(cursor.fetchone()[0])


def primary_address() -> tuple[str, int] | None:
    """Where this standby's primary is, from its `primary_conninfo` (None when it has none)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW primary_conninfo")
            conninfo = cursor.fetchone()[0]
    except DatabaseError as exc:
        raise ReplicationError(
            f"This standby cannot say where its primary is ({_first_line(exc)}): the console's "
            f"role ({settings.DATABASES['default'].get('USER')}) needs pg_read_all_settings "
            "to read primary_conninfo ('GRANT pg_read_all_settings TO <role>' on the primary). "
            "Or, knowing the primary is gone, run again with --force. Nothing was changed."
        ) from exc
    if not conninfo:
        return None
    from psycopg.conninfo import conninfo_to_dict  # here: only PostgreSQL's standby gets here

    options = conninfo_to_dict(conninfo)
    return str(options.get("host") or "localhost"), int(options.get("port") or 5432)


def primary_answers(host: str, port: int) -> bool:
    """Whether a PostgreSQL server takes connections at the primary's address: any answer,
    a refused password too, means a server is there; only silence or a refused connection
    means it is gone."""
    import psycopg  # the `postgres` extra: not installed where SQLite is the database

    db = settings.DATABASES["default"]
    try:
        psycopg.connect(
            host=host,
            port=port,
            dbname=db["NAME"],
            user=db.get("USER"),
            password=db.get("PASSWORD"),
            connect_timeout=ANSWER_TIMEOUT_S,
        ).close()
    except psycopg.OperationalError as exc:
        # Gone only when nothing was reached. Anything else the server said (a refused
        # password, too many clients, starting up or shutting down, no such database) is an
        # answer, and so is an error not known here: a promotion beside a live primary makes
        # two, so in doubt it takes --force.
        return not any(words in str(exc) for words in UNREACHED)
    return True


def promote(actor: audit.Actor, reason: str, force: bool = False) -> Promotion:
    """Make this console's database the primary (see the module's docstring). Refused, with
    nothing changed, when it is no standby, when its primary answers and `force` is not given,
    or without a reason."""
    reason = text.plain(reason.strip(), "reason")
    if not reason:
        raise ReplicationError(
            'Say why (--reason "..."): the promotion is recorded in the audit trail with who '
            "ran it, from which host and why. Nothing was changed."
        )
    if not in_recovery():
        raise conflict(
            f"This console's database ({database_address()}) is not a standby: it takes writes "
            "already (it is a primary, or a standby promoted before). Nothing was changed."
        )
    primary, answered = _check_primary(force)
    started = time.monotonic()
    _pg_promote()
    took = time.monotonic() - started
    forced = f"FORCED while the primary at {primary} still answered. " if answered else ""
    audit.record(
        actor,
        "database.promote_standby",
        f"database {database_address()}",
        before={"role": "standby", "primary": primary},
        after={
            "role": "primary",
            "host": settings.HOST_NAME,
            "os_user": os_user(),
            "forced": force,
            "promote_s": round(took, 1),
        },
        message=forced + reason,
    )
    log.warning("This database (%s) was promoted to primary: %s", database_address(), reason)
    return Promotion(database_address(), primary, answered, took, _clear_old_supervision())


def _check_primary(force: bool) -> tuple[str, bool]:
    """The primary's address in words, and whether it answers; refused when it does (split
    brain) unless forced."""
    try:
        found = primary_address()
    except ReplicationError:
        if not force:
            raise
        return "", False
    if found is None:
        return "", False
    where = f"{found[0]}:{found[1]}"
    answered = primary_answers(*found)
    if answered and not force:
        raise conflict(
            f"The primary database at {where} still answers: promoting this standby now would "
            "make two primaries (split brain), and each region's engine would copy the same "
            "mirrors. Stop the primary region's database (or make sure its region is cut off "
            "for good), then run this again; or, knowing it is no longer used, add --force with "
            "a --reason saying why. Nothing was changed."
        )
    return where, answered


def _pg_promote() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_promote(true, %s)", [PROMOTE_WAIT_S])
            promoted = bool(cursor.fetchone()[0])
    except DatabaseError as exc:
        raise ReplicationError(
            f"PostgreSQL refused to promote this standby ({_first_line(exc)}). The console's "
            "role needs 'GRANT EXECUTE ON FUNCTION pg_promote(boolean, integer) TO <role>' "
            "(given on the primary, it is on the standby too); or promote it as a superuser "
            "('SELECT pg_promote()'). Nothing was changed."
        ) from exc
    if not promoted:
        raise unavailable(
            f"PostgreSQL did not finish promoting this standby within {PROMOTE_WAIT_S} s; its "
            "log says why. Run this again once it has."
        )
    # Sessions opened during recovery are not trusted to write: open a new one, and wait for
    # it to take writes.
    connection.close()
    deadline = time.monotonic() + PROMOTE_WAIT_S
    while in_recovery() or _read_only():
        if time.monotonic() > deadline:
            raise unavailable(f"The database did not take writes within {PROMOTE_WAIT_S} s.")
        time.sleep(0.2)
        connection.close()


def _read_only() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_read_only")
        return cursor.fetchone()[0] == "on"


def _clear_old_supervision() -> str:
    """This region's Redis as the engine's supervisor will find it, in words; a supervision
    record left there from an earlier time this region ran the engine (its failures, its
    pause) is deleted, unless that engine still beats."""
    try:
        r = client()
        record = process.supervision(r)
        heartbeat = control.engine_heartbeat(r, process.engine_id())
        beats = time.time() - heartbeat.get("at_ms", 0) / 1000 < settings.ENGINE_TAKEOVER_S
        if beats and heartbeat.get("state") in ("starting", "running"):
            return (
                f"An engine already runs for this database on host {heartbeat.get('host')} "
                f"(pid {heartbeat.get('pid')}), as this region's Redis says: it was started "
                "before the promotion, and goes on."
            )
        if record:
            r.delete(process.supervision_key())
    except redis.RedisError as exc:
        return (
            f"This region's Redis does not answer ({exc}): start it before the console, "
            "workers and beat, whose supervisor then starts the engine."
        )
    return (
        "No engine runs for this database in this region: the supervisor of this region's "
        "workers starts it at its first round, without waiting for the lost region's (whose "
        "supervision record and heartbeats were in that region's Redis)."
    )


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def next_steps(promotion: Promotion) -> list[str]:
    """What the operator does now, in words (the command prints them)."""
    forced = (
        [
            f"The old primary at {promotion.primary} still answered: stop it, and the console, "
            "workers and beat of its region, before anything writes to it again."
        ]
        if promotion.primary_answered
        else []
    )
    return [
        f"This database ({promotion.database}) is the primary now, promoted in "
        f"{promotion.took_s:.1f} s; the promotion is in the audit trail.",
        *forced,
        promotion.engine,
        "1. Start this region's console, workers and beat. The engine then copies the links "
        "whose clusters this region reaches; a link whose source was in the lost region stays "
        "unavailable until you fail its mirrors over.",
        "2. Fail the mirrors over from this console (each mirror's or link's Failover, approved "
        "as usual), then point the applications at this region's clusters.",
        "3. Do not start the lost region's Isthmus or its old database again as they were: "
        f"when that region is back, rebuild its database as a standby of this one{_of(promotion)}"
        " and keep its console, workers and beat stopped (docs/deployment.md, "
        '"A standby region").',
    ]


def _of(promotion: Promotion) -> str:
    return f" (it was the primary at {promotion.primary})" if promotion.primary else ""
