"""The devstack's own PostgreSQL (ISTHMUS_DB=postgres): Debian's `postgresql` package, one
cluster in var/postgres, listening on 127.0.0.1 only, with the role and database the settings
name (`settings.DEVSTACK_POSTGRES`).

PostgreSQL refuses to run as root. Run by root, `initdb` and the server run as the `postgres`
system user that Debian's package creates (through `setpriv`, which execs, so the pid recorded
is the server's own), the data directory belongs to that user, and var/ (owner-only) lets the
`postgres` group pass through it, not list it. Run by any other user, they run as that user
and var/ stays as it is.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

SERVICE_USER = "postgres"  # made by Debian's postgresql-common


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


def _open_var_dir_to_service_user(var_dir: Path) -> None:
    """Root only: the service user's group may pass through var/ (not list it), and owns
    var/postgres."""
    uid, gid = _service_account()
    if var_dir.stat().st_gid != gid:
        os.chown(var_dir, -1, gid)
    var_dir.chmod(0o710)
    home(var_dir).mkdir(mode=0o700, exist_ok=True)
    os.chown(home(var_dir), uid, gid)
    probe = subprocess.run(
        [*_as_service_user(), "test", "-w", str(home(var_dir))], capture_output=True
    )
    if probe.returncode != 0:
        group = grp.getgrgid(gid).gr_name
        raise PostgresError(
            f"The {SERVICE_USER!r} user cannot reach {home(var_dir)}: a folder above "
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
    var_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _open_var_dir_to_service_user(var_dir)
    else:
        home(var_dir).mkdir(mode=0o700, exist_ok=True)
    data = data_dir(var_dir)
    if (data / "PG_VERSION").exists():
        return
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", spec["user"] + spec["name"]):
        raise PostgresError(f"Unexpected role or database name {spec['user']!r}, {spec['name']!r}")
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
    # Single-user mode, before the server ever listens: one statement a line.
    bootstrap = subprocess.run(
        [*run, str(bindir / "postgres"), "--single", "-D", str(scratch), "postgres"],
        input=(
            f"CREATE ROLE {spec['user']} LOGIN CREATEDB PASSWORD "
            f"{_sql_literal(spec['password'])};\n"
            f"CREATE DATABASE {spec['name']} OWNER {spec['user']};\n"
        ),
        capture_output=True,
        text=True,
    )
    # Single-user mode exits 0 after a failed statement; its ERROR lines say what failed
    # (not its STATEMENT lines, which would show the password).
    errors = [line for line in bootstrap.stderr.splitlines() if "ERROR:" in line]
    if bootstrap.returncode != 0 or errors:
        why = "; ".join(errors) or f"postgres --single exited with {bootstrap.returncode}"
        raise PostgresError(f"Creating the role and database failed: {why}")
    subprocess.run([*run, "mv", str(scratch), str(data)], check=True)


def command(var_dir: Path, spec: dict) -> list[str]:
    """The server in the foreground, on 127.0.0.1 only, no Unix socket, logging to stderr."""
    return [
        *_as_service_user(),
        str(bin_dir() / "postgres"),
        "-D",
        str(data_dir(var_dir)),
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
