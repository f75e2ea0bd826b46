"""The routes of the JSON API's views, on Kafka REST v3 paths; urls.py mounts them with the
OpenAPI document's, which openapi.py builds from these."""

from django.urls import path

from console.api import (
    approvals,
    broker_reads,
    cluster_reads,
    clusters,
    flows,
    gateways,
    links,
    mirrors,
    readiness,
    rpo,
    verifications,
)

CLUSTER = "clusters/<str:cluster_id>/"
LINK = CLUSTER + "links/<str:link_name>/"
TOPIC = CLUSTER + "topics/<str:topic_name>"
GROUP = CLUSTER + "consumer-groups/<str:consumer_group_id>"

urlpatterns = [
    path("clusters", clusters.clusters, name="api-clusters"),
    path(CLUSTER[:-1], clusters.cluster_detail, name="api-cluster"),
    # Isthmus's gateways, top-level as the clusters: a gateway may route to any of them.
    path("gateways", gateways.gateways, name="api-gateways"),
    path("gateways/<str:gateway_name>:switch", gateways.gateway_switch, name="api-gateway-switch"),
    path("gateways/<str:gateway_name>", gateways.gateway, name="api-gateway"),
    # Reads of the cluster itself, for Confluent's tools.
    path(CLUSTER + "brokers", broker_reads.brokers, name="api-brokers"),
    path(CLUSTER + "brokers/<str:broker_id>", broker_reads.broker, name="api-broker"),
    path(
        CLUSTER + "brokers/<str:broker_id>/configs",
        broker_reads.broker_configs,
        name="api-broker-configs",
    ),
    path(
        CLUSTER + "brokers/<str:broker_id>/configs/<str:broker_config_name>",
        broker_reads.broker_config,
        name="api-broker-config",
    ),
    path(CLUSTER + "broker-configs", broker_reads.cluster_configs, name="api-cluster-configs"),
    path(CLUSTER + "topics", cluster_reads.topics, name="api-topics"),
    path(TOPIC, cluster_reads.topic, name="api-topic"),
    path(TOPIC + "/partitions", cluster_reads.partitions, name="api-partitions"),
    path(TOPIC + "/partitions/<str:partition_id>", cluster_reads.partition, name="api-partition"),
    path(
        TOPIC + "/partitions/<str:partition_id>/replicas",
        cluster_reads.replicas,
        name="api-replicas",
    ),
    # "-" for every topic and every partition, as Kafka REST has them.
    path(
        TOPIC + "/partitions/<str:partition_id>/reassignment",
        broker_reads.reassignments,
        name="api-reassignments",
    ),
    path(TOPIC + "/configs", cluster_reads.topic_configs, name="api-topic-configs"),
    path(TOPIC + "/configs/<str:name>", cluster_reads.topic_config, name="api-topic-config"),
    path(CLUSTER + "consumer-groups", cluster_reads.groups, name="api-groups"),
    path(GROUP, cluster_reads.group, name="api-group"),
    path(GROUP + "/consumers", cluster_reads.consumers, name="api-consumers"),
    path(GROUP + "/lags", cluster_reads.lags, name="api-lags"),
    path(
        GROUP + "/lags/<str:topic_name>/partitions/<str:partition_id>",
        cluster_reads.partition_lag,
        name="api-partition-lag",
    ),
    path(GROUP + "/lag-summary", cluster_reads.lag_summary, name="api-lag-summary"),
    path(CLUSTER + "acls", cluster_reads.acls, name="api-acls"),
    path(CLUSTER + "links", links.links, name="api-links"),
    # "-" stands for every link; it must come before the link-name routes.
    path(CLUSTER + "links/-/mirrors", mirrors.all_mirrors, name="api-all-mirrors"),
    path(LINK[:-1], links.link, name="api-link"),
    path(LINK + "configs", links.link_configs_list, name="api-link-configs"),
    path(LINK + "configs:alter", links.link_configs_alter, name="api-link-configs-alter"),
    path(LINK + "configs/<str:config_name>", links.link_config, name="api-link-config"),
    path(LINK + "rpo-target", rpo.rpo_target, name="api-link-rpo-target"),
    path(LINK + "readiness", readiness.link_readiness, name="api-link-readiness"),
    path(LINK + "schemas", links.link_schemas, name="api-link-schemas"),
    path(LINK + "schemas:sync", links.link_schemas_sync, name="api-link-schemas-sync"),
    path(LINK + "schemas:promote", links.link_schemas_promote, name="api-link-schemas-promote"),
    path(LINK + "mirrors", mirrors.mirrors, name="api-mirrors"),
    *[
        path(
            f"{LINK}mirrors:{action}",
            mirrors.mirrors_action,
            {"action": action},
            name=f"api-mirrors-{action}",
        )
        for action in mirrors.ACTIONS
    ],
    *[
        path(
            f"{LINK}mirrors:{action}",
            mirrors.mirrors_stop,
            {"action": action},
            name=f"api-mirrors-{action}",
        )
        for action in mirrors.STOPS
    ],
    path(LINK + "mirrors:verify", verifications.verify, name="api-mirrors-verify"),
    path(LINK + "mirrors/<str:mirror_topic_name>", mirrors.mirror, name="api-mirror"),
    path(
        LINK + "mirrors/<str:mirror_topic_name>/verifications",
        verifications.verifications,
        name="api-verifications",
    ),
    path(
        LINK + "mirrors/<str:mirror_topic_name>/verifications/<str:verification_id>",
        verifications.verification_detail,
        name="api-verification",
    ),
    path(
        CLUSTER + "flows:import-replicator", flows.import_replicator, name="api-import-replicator"
    ),
    path(LINK + "flows", flows.flows, name="api-flows"),
    # A flow's name holds no colon: the actions come first.
    *[
        path(
            f"{LINK}flows/<str:flow_name>:{action}",
            flows.flow_action,
            {"action": action},
            name=f"api-flow-{action}",
        )
        for action in flows.ACTIONS
    ],
    path(LINK + "flows/<str:flow_name>", flows.flow, name="api-flow"),
    path(CLUSTER + "approval-requests", approvals.request_list, name="api-requests"),
    *[
        path(
            f"{CLUSTER}approval-requests/<str:request_id>:{verb}",
            view,
            name=f"api-request-{verb}",
        )
        for verb, view in (
            ("approve", approvals.request_approve),
            ("reject", approvals.request_reject),
            ("withdraw", approvals.request_withdraw),
        )
    ],
    # after the actions: a request id with ":approve" would match this too
    path(
        CLUSTER + "approval-requests/<str:request_id>",
        approvals.request_detail,
        name="api-request",
    ),
]
