import shutil
import subprocess

import pytest

from tests.conftest import ROOT


def compose_available() -> bool:
    if not shutil.which("docker"):
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.skipif(not compose_available(), reason="no docker compose client on this machine")
def test_the_compose_file_is_valid_and_has_the_whole_stack():
    result = subprocess.run(
        ["docker", "compose", "-f", str(ROOT / "docker-compose.yaml"), "config", "--services"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) >= {
        "source",
        "destination",
        "redis",
        "web",
        "worker",
        "beat",
    }
