"""One registration per Kafka cluster id, held by the database itself, so two registrations of
one cluster racing each other cannot both land."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from replication.models import KafkaCluster

pytestmark = pytest.mark.django_db


def test_the_database_refuses_a_second_registration_of_one_cluster_id():
    KafkaCluster.objects.create(name="east", bootstrap_servers="h:1", cluster_id="abc")
    with pytest.raises(IntegrityError), transaction.atomic():
        KafkaCluster.objects.create(name="east-2", bootstrap_servers="h:2", cluster_id="abc")
    KafkaCluster.objects.create(name="west", bootstrap_servers="h:3", cluster_id="xyz")
    assert sorted(KafkaCluster.objects.values_list("name", flat=True)) == ["east", "west"]


def test_clusters_whose_id_is_not_known_yet_do_not_collide():
    KafkaCluster.objects.create(name="a", bootstrap_servers="h:1")
    KafkaCluster.objects.create(name="b", bootstrap_servers="h:2")
    assert KafkaCluster.objects.count() == 2
