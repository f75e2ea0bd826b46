"""A Spark standalone cluster on this machine for tests: a master and workers started from the
pinned PySpark, as `SPARK_MASTER=spark://…` would find them on other machines.

The workers run outside the repository, without the project on PYTHONPATH, and their executors
run a Python that has confluent-kafka and redis and nothing else (not this checkout's
virtualenv, which has the project installed in editable mode and would find the code by
itself). So the copier's code can only reach them the way the launcher ships it, `--py-files`
of its zip, and pyspark only from Spark's own python/lib, as on any cluster.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import psutil
import pyspark

from infra import processes
from spark_jobs import launch

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
# What executors need besides Spark.
EXECUTOR_PACKAGES = (
    "confluent-kafka",
    "redis",
    "cryptography",
    "cffi",
    *("kafka-python", "crc32c", "lz4", "zstandard", "python-snappy", "cramjam"),  # batch path
)
# The secret the master, the workers and the link's application share (spark.authenticate).
AUTH_SECRET = "standalone-test-secret"


@dataclass(frozen=True)
class Worker:
    pidfile: Path  # its JVM's, the leader of a process group of its own
    work: Path  # its work dir: one folder per application, one per executor in it
    log: Path


@dataclass(frozen=True)
class Standalone:
    url: str  # spark://127.0.0.1:<port>
    workers: tuple[Worker, ...]
    python: str  # the executors' Python: EXECUTOR_PACKAGES, not the project


def _wait_for(pattern: str, log: Path, pidfile: Path, timeout: float = 180) -> re.Match:
    def found() -> re.Match | None:
        match = re.search(pattern, log.read_text() if log.exists() else "")
        if not match and processes.read_pidfile(pidfile) is None:
            raise AssertionError(f"exited without {pattern!r}: {log}:\n{log.read_text()[-3000:]}")
        return match

    match = processes.wait_for(found, timeout, 0.2, ignore=())
    if match is None:
        raise AssertionError(f"no {pattern!r} in {log}:\n{log.read_text()[-3000:]}")
    return match


def _executors_python(where: Path, env: dict[str, str]) -> str:
    """A virtualenv with EXECUTOR_PACKAGES alone, as docs/running.md asks of executors:
    Spark puts its own pyspark and py4j on the path from its python/lib, and the project
    arrives with the application."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = where / "lib" / version / "site-packages"
    for name in EXECUTOR_PACKAGES:
        dist = metadata.distribution(name)
        for top in {Path(f).parts[0] for f in dist.files or ()} - {".."}:  # not files outside
            if not (packages / top).exists():
                (packages / top).symlink_to(str(dist.locate_file(top)))
    python = str(where / "bin" / "python")
    importable = {
        **dict.fromkeys(("confluent_kafka", "redis", "cryptography", "kafka", "crc32c"), True),
        **dict.fromkeys(("lz4", "zstandard", "snappy"), True),
        "pyspark": False,
    }
    for module, wanted in {**importable, **dict.fromkeys(launch.CODE, False)}.items():
        run = subprocess.run(
            [python, "-c", f"import {module}"], cwd=where, env=env, capture_output=True, text=True
        )
        assert (run.returncode == 0) == wanted, f"import {module} in the executors' Python: {run}"
    return python


@contextlib.contextmanager
def standalone(workers: int, cores: int) -> Iterator[Standalone]:
    """A master and `workers` workers of `cores` cores each on 127.0.0.1, on free ports;
    stopped, with every process of their sessions (executors, Python workers), at the end."""
    home = Path(tempfile.mkdtemp(prefix="isthmus-standalone-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="512m",
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",  # else it takes port 6066
    )
    # Authenticated and encrypted, as docs/operations.md asks of a cluster: the secret in a
    # properties file, not on the daemons' command lines.
    properties = home / "spark-auth.properties"
    properties.write_text(
        "spark.authenticate=true\n"
        f"spark.authenticate.secret={AUTH_SECRET}\n"
        "spark.network.crypto.enabled=true\n"
    )
    properties.chmod(0o600)
    master = home / "master.pid"
    started = [
        Worker(home / f"worker-{n}.pid", home / f"work-{n}", home / f"worker-{n}.log")
        for n in range(workers)
    ]
    try:
        python = _executors_python(home / "env", env)
        processes.start(
            [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"]
            + ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]
            + ["--properties-file", str(properties)],
            pidfile=master,
            logfile=home / "master.log",
            env=env,
            cwd=home,
        )
        url = _wait_for(r"Starting Spark master at (spark://\S+)", home / "master.log", master)[1]
        for worker in started:
            processes.start(
                [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker"]
                + ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]
                + ["--cores", str(cores), "--memory", "2g", "--work-dir", str(worker.work)]
                + ["--properties-file", str(properties), url],
                pidfile=worker.pidfile,
                logfile=worker.log,
                env=env,
                cwd=home,
            )
        for worker in started:
            _wait_for("Successfully registered with master", worker.log, worker.pidfile)
        yield Standalone(url, tuple(started), python)
    finally:
        for worker in started:
            processes.stop(worker.pidfile)
        processes.stop(master)
        shutil.rmtree(home, ignore_errors=True)


def engine_conf(cluster: Standalone, cores: int) -> dict[str, str]:
    """The Spark settings of an engine of `cores` copier slots on the cluster."""
    return {
        "spark.cores.max": str(cores),
        "spark.executor.memory": "1g",
        "spark.pyspark.python": cluster.python,
    }


def processes_in(work: Path) -> list[psutil.Process]:
    """The processes running in a worker's work dir: its executors' JVMs, their PySpark daemons
    and Python workers."""
    found = []
    for proc in psutil.process_iter(["cwd"]):
        if (proc.info["cwd"] or "").startswith(str(work)):
            found.append(proc)
    return found


def executor_pythons(work: Path) -> set[str]:
    """The interpreters of the PySpark daemons whose executors run in `work`."""
    found = set()
    for proc in processes_in(work):
        with contextlib.suppress(psutil.Error):
            cmdline = proc.cmdline()
            if "pyspark.daemon" in cmdline:
                found.add(cmdline[0])
    return found


def signal_host(worker: Worker, signum: int) -> list[psutil.Process]:
    """The worker's host dies (SIGKILL) or stops answering (SIGSTOP): `signum` to every
    process group of its session (the worker's JVM, its executors' JVMs, their PySpark daemons
    and Python workers, which the daemons put in groups of their own). Returns the processes
    signalled."""
    running = processes.read_pidfile(worker.pidfile)
    assert running is not None, f"the worker of {worker.work} is not running"
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError):
            if os.getsid(proc.pid) == running.pid:
                members.append((proc, os.getpgid(proc.pid)))
    for group in {group for _, group in members}:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signum)
    return [proc for proc, _ in members]
