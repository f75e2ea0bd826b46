"""Fixtures the integration tests share: command lines as typed."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from tests.conftest import ROOT


@pytest.fixture
def typed(live_server, registered_clusters, tokens):
    """Run a command line as typed in a shell, with bin/ first on PATH and a role's token."""

    def run(line: str, role: str = "operator", **env: str) -> subprocess.CompletedProcess:
        environment = {
            **os.environ,
            "PATH": f"{ROOT / 'bin'}:{os.environ['PATH']}",
            "ISTHMUS_URL": live_server.url,
            "ISTHMUS_TOKEN": tokens[role],
            "ISTHMUS_CONFIG": "/nonexistent",
            **env,
        }
        return subprocess.run(
            shlex.split(line), capture_output=True, text=True, env=environment, timeout=120
        )

    return run
