"""Fixtures the integration tests of approvals and the API share."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from devstack import kafka
from replication import audit
from replication.mirrors import create_mirror
from replication.models import MirrorTopic
from replication.tokens import create_token


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
