"""The OpenAPI document of the JSON API, served at /kafka/v3/openapi.json, built from the routes:
every path, method, path parameter and access-policy action from routes.py and each view's
`@endpoint`, every schema from the pydantic models of schemas/. Written here is only what the
code cannot say: each operation's id and words, query parameters, the models it takes and
answers, its own errors (OPERATIONS); tests/unit/test_openapi_routes.py checks it against them.

Not django-ninja, though it builds such a document from pydantic models: its views parse
bodies and queries themselves (422 `{"detail": ...}`), authenticate per router and answer
errors through its own handlers. Keeping the v3 envelope and its messages, Basic with tokens
beside the session with its CSRF check, the one `@endpoint` policy check and the per-cluster
root (one API mounted twice) would mean re-plumbing all 55 operations and overriding most of it.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any, get_args

from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, path
from pydantic import BaseModel

from console.access import POLICY, ROLES
from console.api import routes
from console.api import schemas as S  # short: the tables below name many
from console.api.base import CHALLENGE, ERROR_CODES, endpoint
from replication.core import link_configs
from replication.kafka import inspection
from replication.models import ApprovalRequest, MirrorTopic

JSON = "application/json"

DESCRIPTION = f"""\
Cluster links and mirror topics of the clusters registered in Isthmus, on the paths and with
the bodies of Confluent's Kafka REST v3 Cluster Linking API, so its clients and scripts work.

**Authentication.** Send a personal API token as `Authorization: Bearer <token>` (make one on
your account page), or as the password of HTTP Basic with your user name (as Confluent's tools
and `curl -u name:token` do; never your account password), or call from the console in a
browser: the session cookie then counts, and every call but GET needs the `X-CSRFToken` header
(the value of the `csrftoken` cookie). A token acts with its owner's role at the time of the
call; each operation names the access-policy action it needs (`x-isthmus-action`).

**Errors** use the Kafka REST v3 envelope `{{"error_code": ..., "message": ...}}`: the HTTP
status times 100 plus a number ({", ".join(f"{s}: {c}" for s, c in ERROR_CODES.items())}).
The message says what was wrong and what to do.

**Writes** answer 204 without a body (a link or a mirror made, link configs set or reset, a
link deleted), the mirror actions 200 with each topic's own outcome. Where a write offers
`validate_only=true`, it checks the write completely without making it.

**Differences from Confluent.** Isthmus keeps each link on its destination (a source-initiated
link's source half makes none of its own); a bidirectional link
(link.mode=BIDIRECTIONAL) is one each way between two registered clusters, and on it the
mirrors:reverse-and-start-mirror, mirrors:reverse-and-pause-mirror and mirrors:truncate-and-restore
actions are offered. Isthmus's extensions are marked *Isthmus* in their field descriptions.
"""


def parameter(name: str, where: str, description: str, example: Any = None, **schema) -> dict:
    found = {"name": name, "in": where, "required": where == "path", "description": description}
    found["schema"] = schema or {"type": "string"}
    return found if example is None else found | {"example": example}


def flag(name: str, description: str, default: bool = False) -> dict:
    return parameter(name, "query", f"{description} Default: {default}.", type="boolean")


# fmt: off
# The tables from here to `fmt: on` are laid out by hand: a row a line where it fits.
CLUSTER_TAG, LINKING_TAG, DOCS_TAG = "Cluster (v3)", "Cluster Linking (v3)", "API"
GATEWAYS_TAG = "Gateways"
TAGS = {CLUSTER_TAG: "The clusters registered in Isthmus.",
        LINKING_TAG: "Cluster links and their mirror topics.",
        "Topics (v3)": "The cluster's topics, read only.",
        "Consumer Groups (v3)": "The cluster's consumer groups, read only.",
        "ACLs (v3)": "The cluster's ACLs, read only.",
        GATEWAYS_TAG: "*Isthmus*: Kafka proxies clients reach instead of a cluster.",
        DOCS_TAG: "This document."}
# A path's tag, by its segment after /clusters/{cluster_id}/ (none: the cluster itself).
TAG_BY_SEGMENT = {"": CLUSTER_TAG, "topics": "Topics (v3)", "brokers": "Brokers (v3)",
                  "broker-configs": "Brokers (v3)",
                  "consumer-groups": "Consumer Groups (v3)", "acls": "ACLs (v3)"}

SECURITY_SCHEMES = {  # as the description's Authentication says
    "bearerAuth": {"type": "http", "scheme": "bearer", "description": "A personal API token."},
    "basicAuth": {"type": "http", "scheme": "basic", "description": "Your user name, and one of "
                  "your API tokens as the password (never your account password)."},
    "sessionAuth": {"type": "apiKey", "in": "cookie", "name": "sessionid",
                    "description": "The console's session; all but GET need X-CSRFToken."},
}
SKELETON = {"openapi": "3.1.0", "info": {
    "title": "Isthmus API", "version": "3", "description": DESCRIPTION,
    "summary": "Cluster links and mirror topics, on Kafka REST v3 paths.",
    "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}}, "servers": [
    {"url": "/kafka/v3", "description": "Every registered cluster."},
    {"url": "/kafka/{cluster_name}/v3", "description": "One registered cluster alone, as "
     "Confluent Server's REST serves one: GET /clusters lists it only, and other clusters' "
     "paths answer 404. Give Confluent's tools `--url <console>/kafka/<cluster name>`.",
     "variables": {"cluster_name": {"default": "destination",
                                    "description": "The name the cluster was registered under."}}},
], "tags": [{"name": tag, "description": text} for tag, text in TAGS.items()]}

PATH_PARAMETERS = {row[0]: parameter(row[0], "path", *row[1:]) for row in [
    ("cluster_id", "A registered cluster's id (GET /clusters).", "4L6g3nShT-eMCtK--X86sw"),
    ("link_name", "The link name.", "my-link"),
    ("config_name", "The link config name.", "metadata.max.age.ms"),
    ("mirror_topic_name", "The mirror topic name.", "orders"),
    ("request_id", "The approval request's id.", "7"),
    ("verification_id", "The verification's id.", "12"),
    ("flow_name", "The merge flow's name.", "dc1.topic1"),
    ("topic_name", "The topic name.", "orders"),
    ("partition_id", "The partition number.", "0"),
    ("name", "The topic config name.", "cleanup.policy"),
    ("broker_id", "The broker's id (GET brokers).", "1"),
    ("broker_config_name", "The broker config name.", "log.retention.hours"),
    ("consumer_group_id", "The consumer group id.", "billing"),
    ("gateway_name", "The gateway's name.", "orders-gateway"),
]}
PATH_PARAMETERS["config_name"]["schema"]["enum"] = list(link_configs.KEYS)
ACL_FILTERS = (*inspection.ACL_PARAMETERS, "resource_name", "principal", "host")
QUERY_PARAMETERS = {p["name"]: p for p in [
    flag("validate_only", "Check that the call would succeed, without making it."),
    parameter("link_name", "query", "The new link's name.", "my-link") | {"required": True},
    flag("validate_link", "Check that the source answers with the link's credentials.", True),
    flag("force", "Fail over the link's mirror topics (they become writable), then delete."),
    parameter("reason", "query", "Why: approvers and the audit read it."),
    flag("include_tasks", "Accepted for compatibility; tasks is always empty."),
    flag("include_partition_level_truncation_data", "Give each partition's truncation."),
    parameter("mirror_status", "query", "Only mirror topics in this state.", None,
              type="string", enum=list(MirrorTopic.State.values)),
    parameter("state", "query", "Only requests in these states, separated by commas: "
              + ", ".join(ApprovalRequest.State.values)),
    *(parameter(name, "query", f"Only ACLs of this {name.replace('_', ' ')}.")
      for name in ACL_FILTERS),
]}
for _name, (_kind, _) in inspection.ACL_PARAMETERS.items():
    QUERY_PARAMETERS[_name]["schema"]["enum"] = inspection.choices(_kind)

ERROR_WORDS = {
    400: "A bad or repeated query parameter, or a body that does not fit; the message says which.",
    401: "No valid API token and no logged-in session.",
    404: "Under /kafka/<name>/v3: no registered cluster has that name.",
    413: "The body is larger than the console takes.",
    415: "The body is not sent as application/json.",
    503: "A cluster did not answer.",
}

# A request body's example, by its model (each checked against it when the document is built).
EXAMPLES: dict[type[BaseModel], dict] = {
    S.CreateLinkRequest: {"source_cluster_id": "MkU3OEVBNTcwNTJENDM2Qk", "configs": [
        {"name": "bootstrap.servers", "value": "source-broker:9092"},
        {"name": "metadata.max.age.ms", "value": "5000"}]},
    S.UpdateLinkConfigRequest: {"value": "60000"},
    S.SetRpoTargetRequest: {"rpo_target_seconds": 60},
    S.AlterLinkConfigBatchRequest: {"data": [
        {"name": "metadata.max.age.ms", "value": "60000"},
        {"name": "topic.config.sync.include", "operation": "DELETE"}]},
    S.CreateMirrorTopicRequest: {"source_topic_name": "orders",
                                 "configs": [{"name": "retention.ms", "value": "604800000"}]},
    S.AlterMirrorsRequest: {"mirror_topic_names": ["orders", "payments"]},
    S.StopMirrorsRequest: {"mirror_topic_names": ["orders"], "reason": "planned migration"},
    S.VerifyMirrorsRequest: {"mirror_topic_names": ["orders"], "from_offset": 0},
    S.PromoteSubjectsRequest: {"subjects": ["orders-value"], "reason": "cut over"},
    S.CreateMergeFlowRequest: {"source_topic_name": "orders", "destination_topic_name": "all"},
    S.ImportReplicatorRequest: {
        "configuration": "topic.whitelist=orders\ntopic.rename.format=${topic}.copy"},
    S.RejectRequest: {"reason": "not during the sale"},
    S.CreateGatewayRequest: {"gateway_name": "orders-gateway", "address": "127.0.0.1:29400",
                             "cluster_names": ["west", "east"], "route_cluster_name": "west"},
    S.UpdateGatewayRequest: {"cluster_names": ["west", "east", "central"]},
    S.SwitchGatewayRequest: {"cluster_name": "east"},
}
# fmt: on


@dataclass(frozen=True)
class Op:
    """An operation in words, and the models it answers by status (None: no body) and takes."""

    id: str
    summary: str
    answers: dict[int, type[BaseModel] | None]
    description: str = ""
    body: type[BaseModel] | None = None
    query: tuple[str, ...] = ()
    errors: dict[int, str] = field(default_factory=dict)
    body_optional: bool = False


UNDESCRIBED = Op("", "Not described yet: add it to OPERATIONS", {})
ISTHMUS = " (*Isthmus*)"  # Isthmus's own operations: Confluent has none of them
CHOSEN = {400: "Neither or both of mirror_topic_names and mirror_topic_name_pattern, or no topic."}
ELSEWHERE = {409: "The new connection settings reach another cluster than the link's source."}
ASKED: dict[int, type[BaseModel] | None] = {202: S.StopMirrorsResult, 204: None}
APPROVAL = " Subject to the link's approval policy: 202 with the request while it waits."
VALIDATE = ("validate_only",)
TRUNCATION = ("validate_only", "include_partition_level_truncation_data")  # truncate-and-restore
BOTH_WAYS = "On a bidirectional link: "
STOPS = {
    "promote": "Stop mirroring once every partition has lag 0: a writable topic.",
    "failover": "Stop mirroring at once, whatever the lag or the source's health.",
    "reverse-and-start-mirror": BOTH_WAYS + "the source topic fenced, the mirror made writable "
    "once caught up, and the old source a mirror of it, at the same offsets (nothing copied).",
    "reverse-and-pause-mirror": BOTH_WAYS + "the same, the old source's new mirror paused.",
    "truncate-and-restore": BOTH_WAYS + "on the old primary after a failover, its records past "
    "the failover point set aside in a quarantine topic, then it mirrors the promoted topic.",
}

# fmt: off
# The reads (GET, 200 with the model): route name without its api-, operationId, summary, model.
READS: list[tuple[str, str, str, type[BaseModel]]] = [
    ("openapi", "getOpenApiDocument", "This document", S.OpenApiDocument),
    ("clusters", "listKafkaClusters", "List the registered clusters", S.KafkaClusterList),
    ("cluster", "getKafkaCluster", "Get a registered cluster", S.KafkaCluster),
    ("brokers", "listKafkaBrokers", "List the brokers", S.KafkaBrokerList),
    ("broker", "getKafkaBroker", "Describe a broker", S.KafkaBroker),
    ("broker-configs", "listKafkaBrokerConfigs", "List a broker's configs (sensitive values "
     "null)", S.KafkaBrokerConfigList),
    ("broker-config", "getKafkaBrokerConfig", "Describe a broker config", S.KafkaBrokerConfig),
    ("cluster-configs", "listKafkaClusterConfigs", "List the broker configs set for the whole "
     "cluster", S.KafkaClusterConfigList),
    ("topics", "listKafkaTopics", "List the topics", S.KafkaTopicList),
    ("topic", "getKafkaTopic", "Describe a topic", S.KafkaTopic),
    ("partitions", "listKafkaPartitions", "List a topic's partitions", S.KafkaPartitionList),
    ("partition", "getKafkaPartition", "Describe a partition", S.KafkaPartition),
    ("replicas", "listKafkaReplicas", "List a partition's replicas", S.KafkaReplicaList),
    ("topic-configs", "listKafkaTopicConfigs", "List a topic's configs", S.KafkaTopicConfigList),
    ("topic-config", "getKafkaTopicConfig", "Describe a topic config", S.KafkaTopicConfig),
    ("groups", "listKafkaConsumerGroups", "List the consumer groups", S.KafkaConsumerGroupList),
    ("group", "getKafkaConsumerGroup", "Describe a consumer group", S.KafkaConsumerGroup),
    ("consumers", "listKafkaConsumers", "List a group's consumers", S.KafkaConsumerList),
    ("lags", "listKafkaConsumerLags", "List a group's lag per partition", S.KafkaConsumerLagList),
    ("partition-lag", "getKafkaConsumerLag", "Get its lag on a partition", S.KafkaConsumerLag),
    ("lag-summary", "getKafkaConsumerGroupLagSummary", "Sum up a group's lag",
     S.KafkaConsumerGroupLagSummary),
    ("acls", "getKafkaAcls", "List the ACLs", S.KafkaAclList),
    ("links", "listKafkaLinks", "List the links into the cluster", S.KafkaLinkDataList),
    ("all-mirrors", "listKafkaMirrorTopics", "List every link's mirrors", S.KafkaMirrorDataList),
    ("link", "getKafkaLink", "Describe the cluster link", S.KafkaLinkData),
    ("link-configs", "listKafkaLinkConfigs", "List the link's configs", S.KafkaLinkConfigDataList),
    ("link-config", "getKafkaLinkConfigs", "Describe a link config", S.KafkaLinkConfigData),
    ("link-schemas", "getSchemaSync", "Describe its schema sync" + ISTHMUS, S.SchemaSyncData),
    ("link-readiness", "getLinkReadiness", "Its DR readiness and drills" + ISTHMUS,
     S.LinkReadinessData),
    ("mirrors", "listKafkaMirrorTopicsUnderLink", "List the link's mirrors", S.KafkaMirrorDataList),
    ("mirror", "readKafkaMirrorTopic", "Describe the mirror topic", S.KafkaMirrorData),
    ("verifications", "listMirrorTopicVerifications", "List its verifications" + ISTHMUS,
     S.MirrorVerificationList),
    ("verification", "readMirrorTopicVerification", "Describe a verification" + ISTHMUS,
     S.MirrorVerification),
    ("flows", "listMergeFlows", "List the link's merge flows" + ISTHMUS, S.MergeFlowDataList),
    ("flow", "readMergeFlow", "Describe a merge flow" + ISTHMUS, S.MergeFlowData),
    ("requests", "listApprovalRequests", "List approval requests", S.ApprovalRequestList),
    ("gateways", "listGateways", "List the gateways" + ISTHMUS, S.GatewayDataList),
    ("gateway", "getGateway", "Describe a gateway" + ISTHMUS, S.GatewayData),
    ("request", "readApprovalRequest", "Describe an approval request", S.ApprovalRequest),
]
READ_QUERIES: dict[str, tuple[str, ...]] = {"acls": ACL_FILTERS, "link": ("include_tasks",),
    "all-mirrors": ("mirror_status",), "mirrors": ("mirror_status",), "requests": ("state",)}

# Every operation, by method and route name (routes.py's, without its "api-").
OPERATIONS: dict[str, Op] = {
    **{f"GET {name}": Op(id, summary, {200: model}, query=READ_QUERIES.get(name, ()))
       for name, id, summary, model in READS},
    "GET reassignments": Op(
        "listKafkaPartitionReassignments", "Partition moves: not served", {},
        "Always 404, saying why: Isthmus's Kafka client (confluent-kafka, librdkafka) has no "
        "ListPartitionReassignments. Kafka REST's cluster and topic models require the "
        "relationship that points here; kafka-reassign-partitions --list reads them.",
        errors={404: "Always: Isthmus cannot read partition reassignments."}),
    "POST links": Op(
        "createKafkaLink", "Create a cluster link", {204: None, 200: S.KafkaLinkData},
        "A link into this cluster from the one its bootstrap.servers reach. With validate_link "
        "the source must answer with the link's credentials (and be source_cluster_id if given). "
        "link.mode=BIDIRECTIONAL with remote_cluster_id (or source_cluster_id), a registered "
        "cluster, makes both halves; the second side's create of the same link, as Confluent's "
        "recipe types it (remote_cluster_id, cluster_link_id), makes nothing: it answers 200 "
        "with the existing half and a Warning header saying so, or 409 naming what differs. "
        "A source-initiated link: its destination half here with connection.mode=INBOUND and "
        "source_cluster_id, a registered cluster, then its source half on the source with "
        "link.mode=SOURCE and destination_cluster_id; the engine of the source's network zone "
        "copies it from then on (made again, the source half answers 200 and a Warning).",
        S.CreateLinkRequest, ("link_name", "validate_only", "validate_link"),
        {409: "A link of this name exists (from another cluster, one-way, or with other "
               "settings), or the source is another cluster."}),
    "DELETE link": Op(
        "deleteKafkaLink", "Delete the cluster link", ASKED,
        "Refused while its mirror topics still mirror, unless forced: force fails them over "
        "first, so they become ordinary writable topics. *Isthmus*: a bidirectional link is one "
        "object: both halves are deleted (the other half's mirrors and flows too), in one "
        "transaction, or neither; its other_half says what that is." + APPROVAL,
        query=("force", "validate_only", "reason"),
        errors={409: "The link still has mirror topics and force is false."}),
    "PUT link-configs-alter": Op(
        "updateKafkaLinkConfigBatch", "Batch alter cluster link configs", {204: None},
        "Set and reset several configs at once, all or nothing. Setting cluster.link.paused "
        "pauses or resumes the link.", S.AlterLinkConfigBatchRequest, VALIDATE, ELSEWHERE),
    "PUT link-config": Op("updateKafkaLinkConfig", "Alter a link config", {204: None},
                              body=S.UpdateLinkConfigRequest, errors=ELSEWHERE),
    "DELETE link-config": Op("deleteKafkaLinkConfig", "Reset a link config to its default",
                                 {204: None}, errors=ELSEWHERE),
    "PUT link-rpo-target": Op(
        "setLinkRpoTarget", "Set the link's RPO target" + ISTHMUS, {204: None},
        "How far behind in time its mirrors may fall; the beat's lag sample tells the operators "
        "once when one falls further behind, and once when all are back within it. The link's "
        "rpo_target_seconds and each mirror's lag_ms show where they stand.",
        S.SetRpoTargetRequest),
    "POST link-schemas-sync": Op(
        "syncSchemasNow", "Sync the link's schemas now" + ISTHMUS, {202: S.SchemaSyncData},
        "Asked for: a whole run starts within a second.",
        errors={409: "The link does not sync schemas (schema.sync.enable)."}),
    "POST link-schemas-promote": Op(
        "promoteSchemaSubjects", "Make synced subjects writable on the destination" + ISTHMUS,
        {200: S.SchemaSyncData, **ASKED}, "They leave IMPORT mode on the destination's "
        "registry, and the link syncs them no more." + APPROVAL, S.PromoteSubjectsRequest,
        VALIDATE, {409: "The link does not sync schemas."}),
    "POST mirrors": Op(
        "createKafkaMirrorTopic", "Create a mirror topic", {204: None},
        "A read-only topic mirroring a topic of the link's source, with its partition count.",
        S.CreateMirrorTopicRequest, VALIDATE, {409: "The topic exists, or the link FAILED."}),
    **{f"POST mirrors-{verb}": Op(
        f"updateKafkaMirrorTopics{verb.title()}", f"{verb.title()} the mirror topics",
        {200: S.AlterMirrorsResult}, f"{what} Each topic's outcome is its own.",
        S.AlterMirrorsRequest, VALIDATE, CHOSEN)
       for verb, what in [("pause", "Stop fetching for these mirror topics."),
                           ("resume", "Fetch again for these paused mirror topics.")]},
    **{f"POST mirrors-{verb}": Op(
        f"updateKafkaMirrorTopics{verb.title().replace('-', '')}",
        f"{verb.replace('-', ' ').capitalize()} the mirror topics",
        {200: S.StopMirrorsResult, 202: S.StopMirrorsResult}, what + APPROVAL,
        S.StopMirrorsRequest, TRUNCATION if verb.startswith("trunc") else VALIDATE, CHOSEN)
       for verb, what in STOPS.items()},
    "POST mirrors-verify": Op(
        "verifyMirrorTopics", "Compare the mirror topics with their sources" + ISTHMUS,
        {202: S.MirrorVerificationList}, "Every record of a range of source offsets compared "
        "with the mirror's by a worker; read how it goes at the verification's own path.",
        S.VerifyMirrorsRequest,
        errors={**CHOSEN, 409: "A mirror no longer follows its source, or is being verified."}),
    "POST import-replicator": Op(
        "importReplicatorConfiguration", "Make a Replicator configuration's flows" + ISTHMUS,
        {200: S.ReplicatorImport}, "With validate_only nothing is made: the plan alone.",
        S.ImportReplicatorRequest, VALIDATE),
    "POST flows": Op(
        "createMergeFlow", "Create a merge flow" + ISTHMUS, {201: S.MergeFlowData, **ASKED},
        "Copy a source topic over the link into an ordinary, writable topic, exactly once; "
        "offsets are NOT preserved. With validate_only: 204, nothing made." + APPROVAL,
        S.CreateMergeFlowRequest, VALIDATE,
        {409: "The same flow exists, or the destination topic is a mirror."}),
    **{f"POST flow-{verb}": Op(
        f"{verb}MergeFlow", f"{verb.capitalize()} a merge flow" + ISTHMUS,
        {200: S.MergeFlowData}, errors={409: f"The flow cannot be {verb}d from its state."})
       for verb in ("pause", "resume")},
    "DELETE flow": Op(
        "deleteMergeFlow", "Delete a merge flow" + ISTHMUS, ASKED,
        "Its destination topic stays, with every record copied into it." + APPROVAL,
        query=("validate_only", "reason")),
    **{f"POST request-{verb}": Op(
        f"{verb}ApprovalRequest", f"{verb.capitalize()} an approval request",
        {200: S.ApprovalRequest}, body=S.RejectRequest if verb == "reject" else None,
        errors={409: "The request is no longer PENDING."}, body_optional=True)
       for verb in ("approve", "reject", "withdraw")},
    "POST gateways": Op(
        "createGateway", "Define a gateway" + ISTHMUS, {201: S.GatewayData},
        "Its proxy starts on this console's host and must answer with the route's cluster id; "
        "nothing is saved if it does not.", S.CreateGatewayRequest,
        errors={409: "The name is taken, or the address or its ports are in use.",
                503: "The proxy did not start or the cluster did not answer through it."}),
    "PATCH gateway": Op(
        "updateGateway", "Change a gateway's address or clusters" + ISTHMUS, {200: S.GatewayData},
        "A new address restarts its proxy there; its route stays among its clusters.",
        S.UpdateGatewayRequest,
        errors={409: "The new address or its ports are in use.",
                503: "The proxy did not start at the new address (it runs at the old one)."}),
    "DELETE gateway": Op(
        "deleteGateway", "Delete a gateway" + ISTHMUS, {204: None},
        "Its proxy stops: its clients lose their connections. The clusters are not touched."),
    "POST gateway-switch": Op(
        "switchGateway", "Switch a gateway's clients to another cluster" + ISTHMUS,
        {200: S.GatewayData}, "Every client moves at once: the proxy restarts on the cluster "
        "and answers with its cluster id, or the route is put back as it was.",
        S.SwitchGatewayRequest,
        errors={409: "It routes there already.",
                503: "The proxy did not answer on that cluster: its clients are back where "
                "they were."}),
}
# fmt: on


def answer(model: type[BaseModel] | None) -> dict:
    if model is None:
        return {"description": "Done; the response has no body."}
    schema = {"$ref": S.REF.format(model=model.__name__)}
    return {"description": words(model), "content": {JSON: {"schema": schema}}}


def words(model: type[BaseModel]) -> str:
    """What a model is, from its docstring (a list without one: its items')."""
    if model.__doc__:
        return inspect.cleandoc(model.__doc__)
    return f"A list of: {words(get_args(model.model_fields['data'].annotation)[0])}"


def errors(route: str, method: str, action: str, op: Op) -> dict[str, dict]:
    """Its errors: those any call can answer (in its words) and its own."""
    described = ERROR_WORDS | {403: f"Your role does not allow {action}."}
    if method != "GET":
        described[403] += " Or, for a browser session, the CSRF check failed (send X-CSRFToken)."
    if names := " or ".join(re.findall(r"{(\w+)}", route)):
        described[404] = f"The {names} names nothing here. {described[404]}"
    described |= op.errors
    statuses = {400, 401, 403, 404, 503, *op.errors} | ({413, 415} if op.body else set())
    found = {str(s): {**answer(S.Error), "description": described[s]} for s in sorted(statuses)}
    challenge = {"description": f"Always `{CHALLENGE}`.", "schema": {"type": "string"}}
    found["401"]["headers"] = {"WWW-Authenticate": challenge}
    return found


def operation(route: str, name: str, method: str, action: str) -> dict:
    """One operation: its words from OPERATIONS (or a stub that says they are missing)."""
    op = OPERATIONS.get(f"{method} {name.removeprefix('api-')}", UNDESCRIBED)
    roles = ", ".join(r for r in ROLES if r in POLICY[action])
    segment = (route.split("/") + ["", ""])[3]  # "", "clusters", "{cluster_id}", segment
    tag = TAG_BY_SEGMENT.get(segment, LINKING_TAG)
    if name == "api-openapi":
        tag = DOCS_TAG
    elif route.startswith("/gateways"):  # top-level, as /clusters
        tag = GATEWAYS_TAG
    found: dict[str, Any] = {
        "operationId": op.id,
        "tags": [tag],
        "summary": op.summary,
        "description": f"{op.description}\n\nNeeds `{action}` (roles: {roles}).".strip(),
        "x-isthmus-action": action,
        "security": [{scheme: []} for scheme in SECURITY_SCHEMES],
        "responses": {str(s): answer(m) for s, m in sorted(op.answers.items())},
    }
    found["responses"] |= errors(route, method, action, op)
    if op.query:
        found["parameters"] = [QUERY_PARAMETERS[q] for q in op.query]
    if op.body is not None:
        op.body.model_validate(EXAMPLES[op.body])  # an example that no longer fits fails here
        found["requestBody"] = answer(op.body) | {"required": not op.body_optional}
        found["requestBody"]["content"][JSON]["example"] = EXAMPLES[op.body]
    return found


def build(api_routes: list[URLPattern]) -> dict[str, Any]:
    """The document of these routes: their paths, an operation a method `@endpoint` allows."""
    paths: dict[str, dict] = {}
    for route in api_routes:
        where = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(route.pattern))  # as OpenAPI says
        item = paths.setdefault(where, {})
        if names := re.findall(r"{(\w+)}", where):
            item["parameters"] = [PATH_PARAMETERS[n] for n in names]
        actions: dict[str, str] = vars(route.callback)["access_actions"]  # set by @endpoint
        for method, action in actions.items():
            item[method.lower()] = operation(where, route.name or "", method, action)
    components = {"schemas": S.components(), "securitySchemes": SECURITY_SCHEMES}
    return SKELETON | {"paths": paths, "components": components}


@endpoint(GET="console.view")
def document(request: HttpRequest) -> JsonResponse:
    return S.respond(DOCUMENT)


ROUTE = path("openapi.json", document, name="api-openapi")
SPEC = build([ROUTE, *routes.urlpatterns])
# Checked against its own shape once, when the module loads, not on every call.
DOCUMENT = S.OpenApiDocument.model_validate(SPEC)
