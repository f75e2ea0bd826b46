"""The batch path logs in as the link does (issue 48): a link whose source takes SCRAM copies
batch for batch, byte for byte. (SASL/PLAIN is every other test's: the registered destination
is reached as the devstack's `admin` over it.)"""

from __future__ import annotations

import secrets

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from devstack import kafka
from infra.admin_client import AdminClient
from replication.engine import publish
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.mirror_checks import ACTOR, assert_exact_copy, assert_same_batches, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scram_login():
    """SCRAM-SHA-256 credentials for the devstack's `replicator` on the source, made through
    the Admin API as on a real cluster, and deleted afterwards."""
    admin = AdminClient(admin_config(kafka.SOURCE))
    password = secrets.token_urlsafe(12)
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    made = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("replicator", info, password.encode())]
    )
    for future in made.values():
        future.result(30)
    yield {"sasl.username": "replicator", "sasl.password": password}
    gone = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("replicator", ScramMechanism.SCRAM_SHA_256)]
    )
    for future in gone.values():
        future.result(30)


def test_a_source_reached_with_scram_is_copied_byte_for_byte(
    scram_login, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap, "linger.ms": 50})
    for i in range(500):
        producer.produce(topic_name, f"value {i}".encode() * 8, str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    link = make_link(
        {
            "bootstrap.servers": kafka.SOURCE.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            **scram_login,
        }
    )
    assert publish.copy_path(link) == ("batch", "")
    run_until_copied(link, [create_mirror(ACTOR, link, topic_name)])
    assert len(assert_exact_copy(topic_name, topic_name)) == 500
    compared, total = assert_same_batches(topic_name, topic_name)
    assert compared == total > 0
