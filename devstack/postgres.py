"""The devstack's own PostgreSQL (ISTHMUS_DB=postgres): Debian's `postgresql` package, one
cluster in var/postgres, listening on 127.0.0.1 only, with the role and database the settings
name (`settings.DEVSTACK_POSTGRES`).

PostgreSQL refuses to run as root. Run by root, `initdb` and the server run as the `postgres`
system user that Debian's package creates (through `setpriv`, which execs, so the pid recorded
is the server's own), the data directory belongs to that user, and var/ (owner-only) lets the
`postgres` group pass through it, not list it. Run by any other user, they run as that user
and var/ stays as it is.

With `postgres-standby` (started only when named), a second cluster in var/postgres-standby is a
streaming replica of the first (issue 45's standby region, docs/deployment.md): made with
`pg_basebackup -R` through a replication slot, as the replication role the primary has for it
(its password in var/postgres/replication_password, logins from 127.0.0.1 only).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import secrets
import shutil
import subprocess
from pathlib import Path

from infra import processes

SERVICE_USER = "postgres"  # made by Debian's postgresql-common
REPLICATION_ROLE = "isthmus_replication"
STANDBY_SLOT = "isthmus_standby"
_REPLICATION_HBA = f"host replication {REPLICATION_ROLE} 127.0.0.1/32 scram-sha-256\n"


class PostgresError(RuntimeError):
    pass


def bin_dir() -> Path:
    """The newest PostgreSQL's programs from Debian's packages (/usr/lib/postgresql/<ver>/bin),
    or those on the PATH."""
    found = sorted(
        (
            (int(version.name), version / "bin")
            for version in Path("/usr/lib/postgresql").glob("*")
            if version.name.isdigit() and (version / "bin" / "postgres").exists()
        ),
        reverse=True,
    )
    if found:
        return found[0][1]
    if initdb := shutil.which("initdb"):
        return Path(initdb).parent
    raise PostgresError(
        "PostgreSQL is not installed: 'ISTHMUS_DB=postgres make setup' installs Debian's "
        "postgresql package."
    )


def home(var_dir: Path) -> Path:
    return var_dir / "postgres"


def data_dir(var_dir: Path) -> Path:
    return home(var_dir) / "data"


def standby_home(var_dir: Path) -> Path:
    return var_dir / "postgres-standby"


def standby_data_dir(var_dir: Path) -> Path:
    return standby_home(var_dir) / "data"


def replication_password_file(var_dir: Path) -> Path:
    return home(var_dir) / "replication_password"


def standby_passfile(var_dir: Path) -> Path:
    """The standby's login to its primary, as libpq's password file: `primary_conninfo` names
    this file, not the password, so that a role allowed to read the setting (the console's,
    for `promote_standby`) does not learn the replication role's password."""
    return standby_home(var_dir) / "replication.pgpass"


def _write_passfile(path: Path, host: str, port: int, password: str) -> None:
    """`password` for the replication role at host:port, owner-only, owned by the server's
    user (libpq ignores a password file others may read)."""

    def field(text: str) -> str:  # a pgpass field escapes its backslashes and colons
        return text.replace("\\", "\\\\").replace(":", "\\:")

    path.write_text(f"{field(host)}:{port}:*:{REPLICATION_ROLE}:{field(password)}\n")
    path.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(path, *_service_account())


def _conninfo_value(text: str) -> str:
    """A value of a libpq connection string, quoted (a path may hold spaces)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _as_service_user() -> list[str]:
    """The prefix that runs a command as the user PostgreSQL runs as: root's stand-in, or
    nothing (the caller itself)."""
    if os.geteuid() != 0:
        return []
    return [
        "setpriv",
        f"--reuid={SERVICE_USER}",
        f"--regid={SERVICE_USER}",
        "--init-groups",
        "--",
    ]


def _service_account() -> tuple[int, int]:
    try:
        user = pwd.getpwnam(SERVICE_USER)
    except KeyError as exc:
        raise PostgresError(
            f"PostgreSQL refuses to run as root and there is no {SERVICE_USER!r} user to run it "
            "as; Debian's postgresql package makes one ('ISTHMUS_DB=postgres make setup')."
        ) from exc
    return user.pw_uid, user.pw_gid


def _open_var_dir_to_service_user(var_dir: Path, folder: Path) -> None:
    """Root only: the service user's group may pass through var/ (not list it), and owns
    `folder` (var/postgres, var/postgres-standby)."""
    uid, gid = _service_account()
    if var_dir.stat().st_gid != gid:
        os.chown(var_dir, -1, gid)
    var_dir.chmod(0o710)
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chown(folder, uid, gid)
    probe = subprocess.run([*_as_service_user(), "test", "-w", str(folder)], capture_output=True)
    if probe.returncode != 0:
        group = grp.getgrgid(gid).gr_name
        raise PostgresError(
            f"The {SERVICE_USER!r} user cannot reach {folder}: a folder above "
            f"{var_dir} is closed to it. Let the {group!r} group pass through those folders, "
            "set ISTHMUS_VAR_DIR to a folder it can reach, or run as a user other than root."
        )


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def prepare(var_dir: Path, spec: dict) -> None:
    """Make the cluster once: initdb into a scratch folder, password logins from 127.0.0.1
    only, the role (CREATEDB, so the tests can make their database) and its database; then
    move it into place, so a failure halfway leaves nothing half-made."""
    bindir = bin_dir()
    _make_home(var_dir, home(var_dir))
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", spec["user"] + spec["name"]):
        raise PostgresError(f"Unexpected role or database name {spec['user']!r}, {spec['name']!r}")
    data = data_dir(var_dir)
    if (data / "PG_VERSION").exists():
        _allow_replication(var_dir, data, spec)  # a cluster made before standbys were
        return
    scratch = home(var_dir) / "data.new"
    run = _as_service_user()
    subprocess.run([*run, "rm", "-rf", str(scratch)], check=True)
    initdb = subprocess.run(
        [
            *run,
            str(bindir / "initdb"),
            "--pgdata",
            str(scratch),
            "--username",
            "postgres",
            "--encoding",
            "UTF8",
            "--locale",
            "C.UTF-8",
            "--auth",
            "reject",
        ],
        capture_output=True,
        text=True,
    )
    if initdb.returncode != 0:
        raise PostgresError(f"initdb failed: {(initdb.stderr or initdb.stdout).strip()}")
    hba = (
        "# Written by the devstack (devstack/postgres.py): password logins over TCP from this\n"
        "# machine only; the superuser has no password, so it cannot log in at all.\n"
        "host all all 127.0.0.1/32 scram-sha-256\n"
    )
    subprocess.run(
        [*run, "tee", str(scratch / "pg_hba.conf")],
        input=hba,
        text=True,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    _single_user(
        scratch,
        "postgres",
        f"CREATE ROLE {spec['user']} LOGIN CREATEDB PASSWORD {_sql_literal(spec['password'])};\n"
        f"CREATE DATABASE {spec['name']} OWNER {spec['user']};\n",
        "Creating the role and database",
    )
    _allow_replication(var_dir, scratch, spec)
    subprocess.run([*run, "mv", str(scratch), str(data)], check=True)


def _make_home(var_dir: Path, folder: Path) -> None:
    var_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _open_var_dir_to_service_user(var_dir, folder)
    else:
        folder.mkdir(mode=0o700, exist_ok=True)


def _single_user(data: Path, database: str, statements: str, what: str) -> None:
    """Statements (one a line) in single-user mode, the server not running."""
    done = subprocess.run(
        [*_as_service_user(), str(bin_dir() / "postgres"), "--single", "-D", str(data), database],
        input=statements,
        capture_output=True,
        text=True,
    )
    # Single-user mode exits 0 after a failed statement; its ERROR lines say what failed
    # (not its STATEMENT lines, which would show a password).
    errors = [line for line in done.stderr.splitlines() if "ERROR:" in line]
    if done.returncode != 0 or errors:
        why = "; ".join(errors) or f"postgres --single exited with {done.returncode}"
        raise PostgresError(f"{what} failed: {why}")


def _allow_replication(var_dir: Path, data: Path, spec: dict) -> None:
    """What a standby needs of the primary, once (the server not running): the replication
    role with its own password, its login from 127.0.0.1, and, for `promote_standby` run as the
    console's role on the standby, the right to read `primary_conninfo` and to call
    `pg_promote()` (both replicate to the standby with the rest)."""
    hba = subprocess.run(
        [*_as_service_user(), "cat", str(data / "pg_hba.conf")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if _REPLICATION_HBA in hba:
        return
    password = secrets.token_urlsafe(24)
    _single_user(
        data,
        "postgres",
        f"DROP ROLE IF EXISTS {REPLICATION_ROLE};\n"
        f"CREATE ROLE {REPLICATION_ROLE} LOGIN REPLICATION PASSWORD {_sql_literal(password)};\n"
        f"GRANT pg_read_all_settings TO {spec['user']};\n",
        "Creating the replication role",
    )
    _single_user(
        data,
        spec["name"],
        f"GRANT EXECUTE ON FUNCTION pg_promote(boolean, integer) TO {spec['user']};\n",
        "Letting the console's role promote a standby",
    )
    secret = replication_password_file(var_dir)
    secret.write_text(password + "\n")
    secret.chmod(0o600)
    subprocess.run(
        [*_as_service_user(), "tee", "-a", str(data / "pg_hba.conf")],
        input=_REPLICATION_HBA,
        text=True,
        stdout=subprocess.DEVNULL,
        check=True,
    )


def prepare_standby(var_dir: Path, spec: dict, primary_port: int) -> None:
    """Make the standby once, a copy of the running primary that follows it: `pg_basebackup -R`
    (which writes `primary_conninfo` and the slot into the copy) through a replication slot,
    so the primary keeps the WAL the standby has not yet received. Into a scratch folder first,
    as `prepare`."""
    _make_home(var_dir, standby_home(var_dir))
    data = standby_data_dir(var_dir)
    if (data / "PG_VERSION").exists():
        return
    # Started by the same `up` a moment ago, the primary may not take connections yet.
    if not processes.wait_for(lambda: ready(spec["host"], primary_port), 60):
        raise PostgresError(
            f"The standby is copied from the primary PostgreSQL at {spec['host']}:{primary_port}, "
            "which does not answer: start it first ('python manage.py devstack up postgres')."
        )
    secret = replication_password_file(var_dir)
    if not secret.exists():
        raise PostgresError(
            f"The primary PostgreSQL has no replication role yet ({secret} is missing): stop it "
            "and start it again ('python manage.py devstack down postgres', then 'up postgres'), "
            "which adds it."
        )
    passfile = standby_passfile(var_dir)
    _write_passfile(passfile, spec["host"], primary_port, secret.read_text().strip())
    scratch = standby_home(var_dir) / "data.new"
    run = _as_service_user()
    subprocess.run([*run, "rm", "-rf", str(scratch)], check=True)
    backup = [
        *run,
        str(bin_dir() / "pg_basebackup"),
        "--dbname",
        f"host={spec['host']} port={primary_port} user={REPLICATION_ROLE} "
        f"application_name={STANDBY_SLOT} passfile={_conninfo_value(str(passfile))}",
        "--pgdata",
        str(scratch),
        "--write-recovery-conf",
        "--wal-method",
        "stream",
        "--checkpoint",
        "fast",
        "--slot",
        STANDBY_SLOT,
    ]
    # The password from the file, neither on the command line nor in the environment (which
    # -R would write into the copy's primary_conninfo): the conninfo -R writes names the file.
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
    made = subprocess.run([*backup, "--create-slot"], capture_output=True, text=True, env=env)
    if made.returncode != 0 and "already exists" in made.stderr:
        # The slot of an earlier standby, rebuilt: the primary kept its WAL; take it over.
        subprocess.run([*run, "rm", "-rf", str(scratch)], check=True)
        made = subprocess.run(backup, capture_output=True, text=True, env=env)
    if made.returncode != 0:
        raise PostgresError(f"pg_basebackup failed: {(made.stderr or made.stdout).strip()}")
    subprocess.run([*run, "mv", str(scratch), str(data)], check=True)


def command(var_dir: Path, spec: dict, data: Path | None = None) -> list[str]:
    """The server in the foreground, on 127.0.0.1 only, no Unix socket, logging to stderr
    (the primary's, or the cluster in `data`)."""
    return [
        *_as_service_user(),
        str(bin_dir() / "postgres"),
        "-D",
        str(data or data_dir(var_dir)),
        "-h",
        spec["host"],
        "-p",
        str(spec["port"]),
        "-k",
        "",
    ]


def ready(host: str, port: int) -> bool:
    """The server takes connections (the role and database are made before it first starts)."""
    probe = [str(bin_dir() / "pg_isready"), "--quiet", "--host", host, "--port", str(port)]
    return subprocess.run([*probe, "--timeout", "2"], capture_output=True).returncode == 0
