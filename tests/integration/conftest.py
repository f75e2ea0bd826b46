"""Fixtures the integration tests share: API clients, command lines as typed, mirrors."""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid

import pytest
from django.test import Client

from devstack import kafka
from replication import audit
from replication.mirrors import create_mirror
from replication.models import MirrorTopic
from replication.tokens import create_token
from tests.conftest import ROOT


@pytest.fixture
def api(users):
    """A client of the JSON API with an API token of the user of `role`."""

    def as_role(role: str) -> Client:
        name = f"{role} token {uuid.uuid4().hex[:6]}"
        _, secret = create_token(audit.Actor.system("tests"), users[role], name)
        return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    return as_role


@pytest.fixture
def mirror_of(make_link, make_topic, topic_name):
    """A fresh paused link with a mirror of an empty source topic."""

    def make(suffix: str) -> MirrorTopic:
        topic = make_topic(kafka.SOURCE, f"{topic_name}-{suffix}")
        link = make_link({"cluster.link.paused": "true"})
        return create_mirror(audit.Actor.system("tests"), link, topic)

    return make


@pytest.fixture
def tokens(users):
    return {
        role: create_token(audit.Actor.system("tests"), user, "cli")[1]
        for role, user in users.items()
    }


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
