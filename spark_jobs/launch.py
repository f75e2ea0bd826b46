"""How the engine is started: the spark-submit command line and its environment."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

from . import control, payloads

ROOT = Path(__file__).resolve().parent.parent
ENGINE_SCRIPT = ROOT / "spark_jobs" / "engine.py"  # the driver spark-submit runs


def is_engine_driver(command: list[str]) -> bool:
    """Whether a process's command line is the engine's Python driver. Told to stop (SIGTERM),
    it lets its links leave and its slots end, then exits, and spark-submit's JVM with it;
    SIGTERM to the JVM, or to the whole group, would stop Spark under the running slots (their
    Python workers killed, Spark logging each as crashed)."""
    program, *arguments = command or [""]
    return "python" in Path(program).name and str(ENGINE_SCRIPT) in arguments


# The driver's JVM only schedules a few long jobs (records go from consumer to producer in the
# slots' Python workers): a small heap to start with and the serial collector keep it to a
# fraction of the memory the JVM's defaults would take, and its quick compiler alone (C1) to
# about 60 % of the CPU an engine's start took with both compilers.
DRIVER_JAVA_OPTIONS = "-Xms32m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"

# The packages of the application's code (what executors need, and what a benchmark measures).
CODE = ("spark_jobs", "infra")

# Where the operator gives the shared secret of a standalone Spark cluster (settings read it).
AUTH_SECRET_SETTING = "ISTHMUS_SPARK_AUTH_SECRET"  # noqa: S105 (a name, not a secret)
# The file beside the code archive that hands the secret to spark-submit (owner-only).
AUTH_SECRET_FILE = "spark-auth.properties"  # noqa: S105 (a file name)


class LaunchRefused(Exception):
    """The application may not start as configured; the message says what to set."""


def is_local(master: str) -> bool:
    """Whether the application runs whole in the driver's JVM on this machine."""
    return master == "local" or master.startswith("local[")


def _needs_shared_secret(master: str) -> bool:
    """Spark makes a secret of its own for each application on YARN and Kubernetes (and in
    local mode); any other cluster manager (a standalone master, spark://) authenticates with
    a secret its master, workers and applications share, which only the operator can give."""
    return not (is_local(master) or master == "yarn" or master.startswith("k8s://"))


def security_conf(master: str) -> dict[str, str]:
    """The Spark settings that keep the engine from listening to strangers."""
    if is_local(master):
        # Everything runs in the driver's JVM: nothing needs to reach it from elsewhere, so it
        # listens on loopback only (its RPC endpoint and block manager both bind there), and
        # still authenticates, with a secret Spark makes, against other users of this machine.
        return {
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.authenticate": "true",
        }
    # Executors elsewhere must reach the driver: it listens on the network, so every
    # connection authenticates, and is encrypted (the tasks carry the clusters' credentials).
    return {"spark.authenticate": "true", "spark.network.crypto.enabled": "true"}


def _secret_file(where: Path, secret: str) -> Path:
    """A properties file, readable by its owner only, that spark-submit reads the secret from:
    on the command line (`--conf`, `-D`) anyone on the machine would see it in `ps`."""
    if not secret.strip() or any(c in secret for c in "\r\n"):
        raise LaunchRefused(f"{AUTH_SECRET_SETTING} is empty or spans lines")
    where.mkdir(parents=True, exist_ok=True)
    path = where / AUTH_SECRET_FILE
    path.unlink(missing_ok=True)  # so the file is made anew with the mode below
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        # Java properties: a backslash escapes, so it is doubled.
        f.write("spark.authenticate.secret=" + secret.replace("\\", "\\\\") + "\n")
    return path


def code_files() -> list[Path]:
    return sorted(p for package in CODE for p in (ROOT / package).glob("*.py"))


def _code_archive(where: Path) -> Path:
    """The engine's own code, for executors that do not share this machine's files."""
    archive = where / "isthmus-stream.zip"
    sources = code_files()
    if not _current(archive, sources):
        where.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(".tmp")
        with zipfile.ZipFile(partial, "w") as z:
            for path in sources:
                z.write(path, path.relative_to(ROOT))
        partial.replace(archive)
    return archive


def _current(archive: Path, sources: list[Path]) -> bool:
    """Whether the archive holds exactly these files, none changed since (a moved module keeps
    its old time, so the names are compared too)."""
    if not archive.exists() or archive.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        return False
    with zipfile.ZipFile(archive) as z:
        return sorted(z.namelist()) == sorted(str(p.relative_to(ROOT)) for p in sources)


def submit_command(
    spec: payloads.EngineSpec,
    *,
    master: str,
    driver_memory: str = "1g",
    python: str = sys.executable,
    conf: dict[str, str] | None = None,
    auth_secret: str = "",
) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command for `spec` and its environment; `conf` adds Spark settings
    after the launcher's own, so they win (spark.pyspark.python for executors, say).

    The spec holds the key that opens the links' credentials, so it travels in the environment
    of the process (readable only by its user), never on the command line; `auth_secret`, the
    secret a standalone cluster shares, in a file only its user may read. Raises LaunchRefused on a
    master that needs that secret when there is none.
    """
    work = Path(spec["work_dir"])
    secret_args: list[str] = []
    if _needs_shared_secret(master):
        if not auth_secret:
            raise LaunchRefused(
                f"Spark master {master} needs authentication: set {AUTH_SECRET_SETTING} to "
                "the secret its master and workers share (their spark.authenticate.secret) "
                "and restart the Celery worker, then resume the link."
            )
        # --load-spark-defaults: the file adds to spark-defaults.conf instead of replacing it.
        secret_args = [
            "--properties-file",
            str(_secret_file(work, auth_secret)),
            "--load-spark-defaults",
        ]
    argv = [
        str(Path(python).parent / "spark-submit"),
        "--master",
        master,
        "--name",
        "isthmus-engine",
        "--driver-memory",
        driver_memory,
        "--py-files",
        str(_code_archive(work)),
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
        "--conf",
        f"spark.driver.extraJavaOptions={DRIVER_JAVA_OPTIONS}",
        *secret_args,
        *(
            arg
            for key, value in {**security_conf(master), **(conf or {})}.items()
            for arg in ("--conf", f"{key}={value}")
        ),
        str(ENGINE_SCRIPT),
    ]
    env = {
        **os.environ,
        control.SPEC_ENV: json.dumps(spec),
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": python,
    }
    return argv, env
