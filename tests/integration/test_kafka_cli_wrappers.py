"""Every bin/ wrapper starts the real Kafka tool from the Maven jars."""

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

WRAPPERS = sorted(
    p.name for p in (ROOT / "bin").iterdir() if p.name.startswith(("kafka-", "connect-"))
)


def run_help(name: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ROOT / "bin" / name), "--help"], capture_output=True, text=True, timeout=120
    )


def test_every_wrapper_runs_its_tool():
    assert len(WRAPPERS) >= 12
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(WRAPPERS, pool.map(run_help, WRAPPERS), strict=True))
    for name, result in results.items():
        output = result.stdout + result.stderr
        assert "Could not find or load main class" not in output, name
        assert "ClassNotFoundException" not in output, name
        assert "NoClassDefFoundError" not in output, name
        assert "--" in output or "usage" in output.lower(), f"{name} printed no usage:\n{output}"


def test_the_tools_are_apache_kafka_4():
    result = subprocess.run(
        [str(ROOT / "bin" / "kafka-topics"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip().startswith("4."), result.stdout + result.stderr
