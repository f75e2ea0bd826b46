import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT


def compose_command() -> list[str] | None:
    """`docker compose` (the plugin) or the standalone `docker-compose`, whichever works."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client on this machine")
def test_the_compose_file_is_valid_and_has_the_whole_stack():
    env = {
        **os.environ,
        **{
            name: "test-value"
            for name in (
                "ISTHMUS_ADMIN_PASSWORD",
                "ISTHMUS_REPLICATOR_PASSWORD",
                "POSTGRES_PASSWORD",
                "SECRET_KEY",
                "ISTHMUS_ENCRYPTION_KEY",
            )
        },
    }
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yaml"), "config", "--services"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) >= {
        "source",
        "destination",
        "source-registry",
        "destination-registry",
        "redis",
        "postgres",
        "web",
        "worker",
        "scenarios",
        "beat",
    }


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client on this machine")
def test_the_compose_file_refuses_to_start_without_passwords():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ISTHMUS_", "POSTGRES_"))}
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd="/",
    )
    assert result.returncode != 0
    assert "set it in .env" in result.stderr
