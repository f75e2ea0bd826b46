"""What a drill's deployment needs before it starts, run in that deployment's `manage.py shell`
(its database, its Redis): an operator and an approver with API tokens, and the embedded
clusters registered."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group, User

from devstack import kafka
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.kafka.clusters import register_cluster
from replication.models import KafkaCluster
from tests.leftovers import admin_config


def users_and_clusters(
    actor: audit.Actor, password: str
) -> tuple[dict[str, str], dict[str, KafkaCluster]]:
    """The `operator` and `approver` (each in its group, with `password`) and their tokens; the
    clusters by name."""
    tokens = {}
    for role in ("operator", "approver"):
        user = User.objects.create_user(role, password=password)
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        tokens[role] = create_token(actor, user, "drill")[1]
    clusters = {}
    for node in kafka.NODES:
        config = admin_config(node)
        bootstrap = config.pop("bootstrap.servers")
        link_config = kafka.link_credentials(node, settings.VAR_DIR)
        clusters[node.name] = register_cluster(actor, node.name, bootstrap, config, link_config)
    return tokens, clusters
