"""A link's application on a Spark standalone cluster: a master and one worker started here from
the pinned PySpark, as `SPARK_MASTER=spark://…` would find them on other machines.

The worker runs outside the repository, without the project on PYTHONPATH, and its executors
run a Python that has confluent-kafka and redis and nothing else (not this checkout's
virtualenv, which has the project installed in editable mode and would find the code by
itself). So the copier's code can only reach them the way the launcher ships it, `--py-files`
of its zip, and pyspark only from Spark's own python/lib, as on any cluster.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import psutil
import pyspark
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack import kafka
from infra import processes
from replication.topics.mirrors import create_mirror
from spark_jobs import launch
from tests import leftovers
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, assert_exact_copy, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
CORES = 2  # the worker's, and the application's copier tasks
RECORDS = 40_000
PARTITIONS = 4
# What executors need besides Spark.
EXECUTOR_PACKAGES = ("confluent-kafka", "redis", "cryptography", "cffi")
# The secret the master, the worker and the link's application share (spark.authenticate).
AUTH_SECRET = "standalone-test-secret"


@dataclass(frozen=True)
class Standalone:
    url: str  # spark://127.0.0.1:<port>
    work: Path  # the worker's work dir: one folder per application, one per executor in it
    python: str  # the executors' Python: EXECUTOR_PACKAGES, not the project


def _wait_for(pattern: str, log: Path, pidfile: Path, timeout: float = 60) -> re.Match:
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
        for top in {Path(f).parts[0] for f in dist.files} - {".."}:  # not files outside
            if not (packages / top).exists():
                (packages / top).symlink_to(dist.locate_file(top))
    python = str(where / "bin" / "python")
    importable = {"confluent_kafka": True, "redis": True, "cryptography": True, "pyspark": False}
    for module, wanted in {**importable, **dict.fromkeys(launch.CODE, False)}.items():
        run = subprocess.run(
            [python, "-c", f"import {module}"], cwd=where, env=env, capture_output=True, text=True
        )
        assert (run.returncode == 0) == wanted, f"import {module} in the executors' Python: {run}"
    return python


@pytest.fixture(scope="module")
def standalone():
    """A Spark standalone master and one worker of CORES cores on 127.0.0.1, on free ports;
    stopped, with every process of their sessions (executors, Python workers), at the end."""
    home = Path(tempfile.mkdtemp(prefix="isthmus-standalone-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="512m",
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",  # else it takes port 6066
    )
    master, worker = home / "master.pid", home / "worker.pid"
    # Authenticated and encrypted, as docs/operations.md asks of a cluster: the secret in a
    # properties file, not on the daemons' command lines.
    properties = home / "spark-auth.properties"
    properties.write_text(
        "spark.authenticate=true\n"
        f"spark.authenticate.secret={AUTH_SECRET}\n"
        "spark.network.crypto.enabled=true\n"
    )
    properties.chmod(0o600)
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
        processes.start(
            [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker"]
            + ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]
            + ["--cores", str(CORES), "--memory", "2g", "--work-dir", str(home / "work")]
            + ["--properties-file", str(properties), url],
            pidfile=worker,
            logfile=home / "worker.log",
            env=env,
            cwd=home,
        )
        _wait_for("Successfully registered with master", home / "worker.log", worker)
        yield Standalone(url, home / "work", python)
    finally:
        processes.stop(worker)
        processes.stop(master)
        shutil.rmtree(home, ignore_errors=True)


def _source_topic() -> str:
    """RECORDS records over PARTITIONS partitions, with keys, headers and timestamps; some
    values null, some empty."""
    topic = leftovers.unique_name("standalone")
    admin = AdminClient(admin_config(kafka.SOURCE))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer(
        {"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 20, "batch.size": 500_000}
    )
    recent = int(time.time() * 1000) - 600_000
    for i in range(RECORDS):
        value = None if i % 1000 == 7 else b"" if i % 1000 == 8 else random.randbytes(200)
        while True:
            try:
                producer.produce(
                    topic,
                    key=str(i).encode(),
                    value=value,
                    partition=i % PARTITIONS,
                    timestamp=recent + i,
                    headers=[("i", str(i).encode()), ("bin", bytes([i % 256]))],
                )
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    return topic


def _executor_pythons(work: Path) -> set[str]:
    """The interpreters of the PySpark daemons whose executors run in `work`."""
    found = set()
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmdline, cwd = proc.info["cmdline"] or [], proc.info["cwd"] or ""
        if "pyspark.daemon" in cmdline and cwd.startswith(str(work)):
            found.add(cmdline[0])
    return found


def test_the_engine_on_a_standalone_cluster_copies_two_links_exactly_on_its_worker(
    own_engine, make_link, standalone, settings
):
    settings.SPARK_MASTER = standalone.url
    settings.SPARK_AUTH_SECRET = AUTH_SECRET
    settings.STREAM_TASKS = CORES
    settings.SPARK_CONF = {
        "spark.cores.max": str(CORES),
        "spark.executor.memory": "1g",
        "spark.pyspark.python": standalone.python,
    }
    topics = [_source_topic(), _source_topic()]
    links = [make_link(), make_link()]
    mirrors = [create_mirror(ACTOR, link, topic) for link, topic in zip(links, topics, strict=True)]
    for link, mirror in zip(links, mirrors, strict=True):
        run_until_copied(link, [mirror], timeout=180)
    for topic in topics:
        assert len(assert_exact_copy(topic, topic)) == RECORDS

    # Both links' copiers ran in the one application's executor, in the Python without the
    # project, from the archive the launcher shipped.
    (app,) = standalone.work.glob("app-*")
    executors = [d for d in app.iterdir() if (d / "stderr").exists()]
    assert executors, f"no executor ran in {app}"
    stderr = "".join((d / "stderr").read_text() for d in executors)
    for link in links:
        for slot in range(CORES):
            assert f"Link {link.link_id}, slot {slot}: copying" in stderr, stderr[-3000:]
    assert all((d / "isthmus-stream.zip").exists() for d in executors), list(app.rglob("*"))
    assert _executor_pythons(standalone.work) == {standalone.python}
