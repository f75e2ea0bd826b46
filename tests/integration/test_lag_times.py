"""The lag in seconds is the real age of the oldest source record a mirror lacks: read by the
beat's sample with a real consumer from real record timestamps on a broker (no engine runs: the
link is paused), and 0 once the mirror holds every record."""

from __future__ import annotations

import time

import pytest

from devstack import kafka
from replication.observe import lag
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import produce
from tests.mirror_checks import ACTOR

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

AGE_S = 300


def test_the_sample_reads_the_age_of_the_oldest_record_the_mirror_lacks(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    mirror = create_mirror(ACTOR, make_link({"cluster.link.paused": "true"}), topic_name)
    written = int((time.time() - AGE_S) * 1000)
    old = [{"value": b"old", "timestamp": written + n} for n in range(3)]
    produce({"bootstrap.servers": kafka.SOURCE.bootstrap}, topic_name, [*old, {"value": b"new"}])

    lag.sample_all()  # as the beat does every 10 s
    [partition] = lag.latest_of(mirror).partitions.values()
    assert partition.lag == 4 and partition.oldest_timestamp == written
    assert AGE_S * 1000 <= partition.lag_ms < (AGE_S + 10) * 1000

    # The mirror holds every record (written there as the copy would be): caught up, 0.
    produce(admin_config(kafka.DESTINATION), mirror.mirror_topic, [{"value": b"r"}] * 4)
    lag.sample_all()
    assert lag.latest_of(mirror).max_lag_ms == 0
