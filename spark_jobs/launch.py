"""How a link's application is started: the spark-submit command line and its environment."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

from . import control

ROOT = Path(__file__).resolve().parent.parent

# The driver's JVM only schedules one long job: a small heap to start with and the serial
# collector keep it to a fraction of the memory the JVM's defaults would take.
DRIVER_JAVA_OPTIONS = "-Xms32m -XX:+UseSerialGC"

# The packages of the application's code (what executors need, and what a benchmark measures).
CODE = ("spark_jobs", "infra")


def code_files() -> list[Path]:
    return sorted(p for package in CODE for p in (ROOT / package).glob("*.py"))


def _code_archive(where: Path) -> Path:
    """The stream's own code, for executors that do not share this machine's files."""
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
    spec: dict,
    *,
    master: str,
    driver_memory: str = "1g",
    python: str = sys.executable,
    conf: dict[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command for `spec` and its environment; `conf` adds Spark settings
    after the launcher's own, so they win (spark.pyspark.python for executors, say).

    The spec holds the clusters' credentials, so it travels in the environment of the process
    (readable only by its user), never on the command line.
    """
    checkpoint = Path(spec["checkpoint_dir"])
    argv = [
        str(Path(python).parent / "spark-submit"),
        "--master",
        master,
        "--name",
        f"isthmus-link-{spec['link_name']}",
        "--driver-memory",
        driver_memory,
        "--py-files",
        str(_code_archive(checkpoint)),
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
        "--conf",
        f"spark.driver.extraJavaOptions={DRIVER_JAVA_OPTIONS}",
        *(arg for key, value in (conf or {}).items() for arg in ("--conf", f"{key}={value}")),
        str(ROOT / "spark_jobs" / "link_stream.py"),
    ]
    env = {
        **os.environ,
        control.SPEC_ENV: json.dumps(spec),
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": python,
    }
    return argv, env
