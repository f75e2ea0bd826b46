"""Stored credentials go only where they were registered for (issue 23, items 1 and 6).

A recording proxy stands at an address an operator might type: it forwards to the real source
cluster's SASL listener and keeps every byte a client sent it, so a SASL/PLAIN frame with a
stored password would be caught there."""

from __future__ import annotations

import pytest

from devstack import kafka
from replication.core.errors import FieldProblems, ReplicationError
from replication.kafka.clusters import register_cluster
from replication.models import ClusterLink
from replication.topics.link_creation import create_link
from replication.topics.links import alter_link_configs
from tests.conftest import admin_config
from tests.db.test_link_credentials import (
    ACTOR,
    proxy,  # noqa: F401 (fixtures)
)

pytestmark = pytest.mark.integration


def _split(config: dict[str, str]) -> tuple[str, dict[str, str]]:
    config = dict(config)
    return config.pop("bootstrap.servers"), config


def test_the_recording_proxy_would_catch_a_password_sent_through_it(
    registered_clusters, proxy, var_dir
):
    """The judge works: a link given credentials for the proxy's address sends them there."""
    password = kafka.credentials(var_dir)["replicator"]
    create_link(
        ACTOR,
        registered_clusters["destination"],
        "through-proxy",
        {
            "bootstrap.servers": proxy.address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.username": "replicator",
            "sasl.password": password,
        },
        validate_only=True,
    )
    assert password.encode() in proxy.sent


def test_a_registered_source_without_link_credentials_lends_none_of_its_own(db, devstack):
    config = admin_config(kafka.SOURCE)
    bootstrap = config.pop("bootstrap.servers")
    source = register_cluster(ACTOR, "no-link-principal", bootstrap, config)
    destination = register_cluster(ACTOR, "destination", *_split(admin_config(kafka.DESTINATION)))
    with pytest.raises(FieldProblems) as refused:
        create_link(ACTOR, destination, "borrowing", {}, source=source)
    assert "no link credentials registered" in refused.value.problems["source"]
    assert not ClusterLink.objects.exists()


def test_moving_a_link_or_changing_how_it_logs_in_needs_its_credentials_again(
    registered_clusters, proxy, var_dir
):
    link = create_link(
        ACTOR,
        registered_clusters["destination"],
        "registered",
        {},
        source=registered_clusters["source"],
    )
    for change in (
        {"bootstrap.servers": proxy.address},
        {"security.protocol": "SASL_SSL"},
        {"sasl.mechanism": "SCRAM-SHA-512"},
    ):
        with pytest.raises(ReplicationError, match="needs the credentials again"):
            alter_link_configs(ACTOR, link, change)
        with pytest.raises(ReplicationError, match="needs the credentials again"):
            alter_link_configs(ACTOR, link, change, validate_only=True)
    assert proxy.connections == 0 and not proxy.sent
    link.refresh_from_db()
    assert link.configs["bootstrap.servers"] == kafka.SOURCE.sasl_bootstrap
