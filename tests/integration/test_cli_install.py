"""The command-line tools install alone (cli/pyproject.toml) into a clean virtualenv: no
Django, no PySpark, and the tools run.

Needs pip to reach PyPI, or a pip cache holding confluent-kafka 2.16.1 and setuptools (it is
skipped, saying so, when neither is there). About 15 s with a warm cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
OFFLINE = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
)

pytestmark = pytest.mark.integration  # needs PyPI or a warm pip cache, not the clusters


def _run(command: list[str], cwd: Path, timeout: int = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def cli_venv(tmp_path_factory) -> Path:
    """A fresh virtualenv (no system site-packages) with `pip install ./cli` done in it."""
    work = tmp_path_factory.mktemp("cli-install")
    # The distribution needs only cli/ and infra/ beside it: copy just those, so the install
    # proves nothing else of the repo is needed and its build files stay out of the checkout
    # (and apart from concurrent runs).
    skip = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    for folder in ("cli", "infra"):
        shutil.copytree(ROOT / folder, work / folder, ignore=skip)
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False, clear=True)
    python = env_dir / "bin" / "python"
    install = _run([str(python), "-m", "pip", "install", "-q", "./cli"], cwd=work, timeout=240)
    if install.returncode != 0 and any(text in install.stderr for text in OFFLINE):
        pytest.skip(f"pip cannot reach PyPI and its cache lacks a package: {install.stderr[-500:]}")
    assert install.returncode == 0, install.stderr
    return env_dir


@pytest.mark.parametrize("module", ["django", "pyspark", "replication", "console", "infra"])
def test_the_server_packages_are_not_installed(cli_venv, tmp_path, module):
    result = _run([str(cli_venv / "bin" / "python"), "-c", f"import {module}"], cwd=tmp_path)
    assert result.returncode != 0
    assert f"No module named '{module}'" in result.stderr


TOOLS = [
    "kafka-mirrors",
    "kafka-cluster-links",
    "kafka-replica-status",
    "isthmus-kafka-configs",
    "isthmus-gateways",
]


@pytest.mark.parametrize("tool", TOOLS)
def test_the_tools_run(cli_venv, tmp_path, tool):
    argv = [str(cli_venv / "bin" / tool), "--help"]
    if tool == "isthmus-kafka-configs":  # without --cluster-link it is Apache Kafka's own tool
        argv.insert(1, "--cluster-link=demo-link")
    result = _run(argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    prog = "kafka-configs" if tool == "isthmus-kafka-configs" else tool  # as Kafka's names it
    assert result.stdout.startswith(f"usage: {prog}"), result.stdout


def test_the_tools_are_the_only_commands_and_none_shadows_apache_kafkas(cli_venv):
    commands = {p.name for p in (cli_venv / "bin").iterdir()}
    assert set(TOOLS) <= commands
    assert not {"kafka-configs", "kafka-configs.sh"} & commands


def test_kafka_configs_without_a_link_names_what_to_set_when_no_kafka_is_found(cli_venv, tmp_path):
    tool = cli_venv / "bin" / "isthmus-kafka-configs"
    result = _run(["env", "-u", "KAFKA_HOME", str(tool), "--describe"], cwd=tmp_path)
    assert result.returncode == 1
    assert "Apache Kafka's kafka-configs was not found" in result.stderr
    assert "set KAFKA_HOME" in result.stderr


def test_only_the_tools_and_confluent_kafka_are_installed(cli_venv, tmp_path):
    result = _run(
        [str(cli_venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], tmp_path
    )
    installed = {line.split("==")[0].lower() for line in result.stdout.split()}
    # Exactly the tools and their one dependency, beside what every virtualenv holds.
    assert installed - {"pip", "setuptools", "wheel"} == {"isthmus-cli", "confluent-kafka"}
