"""The OpenAPI document of the JSON API, served at /kafka/v3/openapi.json."""

from __future__ import annotations

import re

from pydantic import BaseModel

from console.access import POLICY, ROLES
from console.api import schemas
from console.api.base import CHALLENGE, ERROR_CODES, endpoint
from console.api.schemas import respond
from replication import inspection, link_configs
from replication.models import MirrorTopic

JSON = "application/json"
CLUSTER_TAG = "Cluster (v3)"
LINKING_TAG = "Cluster Linking (v3)"
DOCS_TAG = "API"

CLUSTER = "/clusters/{cluster_id}"
LINK = CLUSTER + "/links/{link_name}"
TOPIC = CLUSTER + "/topics/{topic_name}"
GROUP = CLUSTER + "/consumer-groups/{consumer_group_id}"
TOPICS_TAG = "Topics (v3)"
GROUPS_TAG = "Consumer Groups (v3)"
ACLS_TAG = "ACLs (v3)"

NOT_YET = "The reverse and truncate actions are not offered."

DESCRIPTION = f"""\
Cluster links and mirror topics of the clusters registered in Isthmus, on the paths and with
the bodies of Confluent's Kafka REST v3 Cluster Linking API, so its clients and scripts work.

**Authentication.** Send a personal API token as `Authorization: Bearer <token>` (make one on
your account page), or as the password of HTTP Basic with your user name (as Confluent's tools
and `curl -u name:token` do; never your account password), or call from the console in a
browser: the session cookie then counts,
and every call but GET needs the `X-CSRFToken` header (the value of the `csrftoken` cookie).
A token acts with its owner's role at the time of the call.

**Errors** use the Kafka REST v3 envelope `{{"error_code": ..., "message": ...}}`: the HTTP
status times 100 plus a number ({", ".join(f"{s}: {c}" for s, c in ERROR_CODES.items())}).
The message says what was wrong and what to do.

**Writes** answer 204 without a body: creating a link or a mirror, altering or resetting link
configs, deleting a link. The mirror actions answer 200 with each topic's own outcome.
Where a write offers `validate_only=true`, it checks the write completely without
making it.

**Differences from Confluent.** Links are destination-initiated only. {NOT_YET} Some
responses carry Isthmus extensions, marked *Isthmus* in their field descriptions.
"""


# Schema building blocks. ---------------------------------------------------------------------


def ref(name: str | type[BaseModel], kind: str = "schemas") -> dict:
    if not isinstance(name, str):
        name = name.__name__
    return {"$ref": f"#/components/{kind}/{name}"}


def scalar(kind: str | list[str], description: str = "", **extra) -> dict:
    schema = {"type": kind, **extra}
    if description:
        schema["description"] = description
    return schema


def string(description: str = "", **extra) -> dict:
    return scalar("string", description, **extra)


def boolean(description: str = "", **extra) -> dict:
    return scalar("boolean", description, **extra)


# Parameters. ---------------------------------------------------------------------------------


def parameter(name: str, where: str, schema: dict, description: str, example=None) -> dict:
    param = {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": schema,
    }
    if example is not None:
        param["example"] = example
    return param


def flag(name: str, description: str, default: bool = False) -> dict:
    return parameter(name, "query", boolean(default=default), f"{description} Default: {default}.")


ACL_FILTERS = (*inspection.ACL_PARAMETERS, "resource_name", "principal", "host")


def _acl_parameter(name: str) -> dict:
    kind = inspection.ACL_PARAMETERS.get(name, (None,))[0]
    schema = string(enum=inspection.choices(kind)) if kind else string()
    return parameter(
        name, "query", schema, f"Only ACLs of this {name.replace('_', ' ')}. If not given, any."
    )


PARAMETERS = {
    "ClusterId": parameter(
        "cluster_id",
        "path",
        string(),
        "The Kafka cluster id of a registered cluster (the destination of its links); "
        "GET /clusters lists them.",
        "4L6g3nShT-eMCtK--X86sw",
    ),
    "LinkName": parameter("link_name", "path", string(), "The link name.", "my-link"),
    "ConfigName": parameter(
        "config_name",
        "path",
        string(enum=list(link_configs.KEYS)),
        "The link config name.",
        "metadata.max.age.ms",
    ),
    "MirrorTopicName": parameter(
        "mirror_topic_name", "path", string(), "The mirror topic name.", "orders"
    ),
    "RequestId": parameter("request_id", "path", string(), "The approval request's id.", "7"),
    "VerificationId": parameter(
        "verification_id", "path", string(), "The verification's id.", "12"
    ),
    "FlowName": parameter("flow_name", "path", string(), "The merge flow's name.", "dc1.topic1"),
    "TopicName": parameter("topic_name", "path", string(), "The topic name.", "orders"),
    "PartitionId": parameter("partition_id", "path", string(), "The partition number.", "0"),
    "TopicConfigName": parameter(
        "name", "path", string(), "The topic config name.", "cleanup.policy"
    ),
    "ConsumerGroupId": parameter(
        "consumer_group_id", "path", string(), "The consumer group id.", "billing"
    ),
    **{f"Acl{n.title().replace('_', '')}": _acl_parameter(n) for n in ACL_FILTERS},
    "ValidateOnly": flag(
        "validate_only", "Check that the action would succeed, without performing it."
    ),
    "TruncationData": flag(
        "include_partition_level_truncation_data",
        "truncate-and-restore: give each partition's offset_truncated_to and messages_truncated.",
    ),
    "MirrorStatus": parameter(
        "mirror_status",
        "query",
        string(enum=list(MirrorTopic.State.values)),
        "Only mirror topics in this state. If not given, all mirror topics.",
    ),
}

PATH_PARAMETERS = {
    "cluster_id": "ClusterId",
    "link_name": "LinkName",
    "config_name": "ConfigName",
    "mirror_topic_name": "MirrorTopicName",
    "request_id": "RequestId",
    "verification_id": "VerificationId",
    "flow_name": "FlowName",
    "topic_name": "TopicName",
    "partition_id": "PartitionId",
    "name": "TopicConfigName",
    "consumer_group_id": "ConsumerGroupId",
}


# Responses. ----------------------------------------------------------------------------------

ERROR_EXAMPLES = {
    400: "Query parameter validate_only must be true or false, not 'yes'.",
    401: "Authentication required: send an API token as 'Authorization: Bearer <token>', or as "
    "the password of HTTP Basic with your user name (make one on your account page in the "
    "console).",
    403: "Your role does not allow link.manage (viewer).",
    404: "No cluster link named 'my-link' on cluster destination. "
    "List the links to see their names.",
    409: "A cluster link named 'my-link' already exists on destination.",
    413: "The request body is larger than 2621440 bytes; send less.",
    415: "Send the body as application/json, not text/plain.",
    500: "The console failed while answering; nothing more is known here. The error is in the "
    "console's log: ask an administrator to look there.",
    503: "The source cluster did not answer. Timed out. Nothing was changed.",
}


def error(status: int, description: str) -> dict:
    response = {
        "description": description,
        "content": {
            JSON: {
                "schema": ref(schemas.Error),
                "example": schemas.Error(
                    error_code=ERROR_CODES[status], message=ERROR_EXAMPLES[status]
                ).model_dump(),
            }
        },
    }
    if status == 401:
        response["headers"] = {
            "WWW-Authenticate": {
                "description": f"Always `{CHALLENGE}`.",
                "schema": string(),
            }
        }
    return response


def ok(schema: type[schemas.Shape], description: str, status: int = 200) -> dict:
    return {str(status): {"description": description, "content": {JSON: {"schema": ref(schema)}}}}


NO_CONTENT = {"204": {"description": "Done; the response has no body."}}


def operation(
    operation_id: str,
    tag: str,
    summary: str,
    action: str,
    responses: dict,
    *,
    description: str = "",
    parameters: tuple[str | dict, ...] = (),
    body: dict | None = None,
    errors: dict[int, str] | None = None,
) -> dict:
    """One operation. `action` is the access-policy action the call needs; `errors` maps the
    error statuses the operation can answer, besides 401 and 403, to what they mean there."""
    roles = ", ".join(r for r in ROLES if r in POLICY[action])
    forbidden = f"Your role does not allow {action}."
    if action != "console.view":  # a write, so not a GET
        forbidden += " Or, for a browser session, the CSRF check failed (send X-CSRFToken)."
    failures = {
        401: "No valid API token and no logged-in session.",
        403: forbidden,
        **(errors or {}),
    }
    if body is not None:
        failures[415] = "The body is not sent as application/json."
    op = {
        "operationId": operation_id,
        "tags": [tag],
        "summary": summary,
        "description": f"{description}\n\nNeeds `{action}` (roles: {roles}).".strip(),
        "x-isthmus-action": action,
        "responses": {
            **responses,
            **{str(s): error(s, failures[s]) for s in sorted(failures)},
        },
    }
    if parameters:
        op["parameters"] = [ref(p, "parameters") if isinstance(p, str) else p for p in parameters]
    if body is not None:
        op["requestBody"] = body
    return op


def request(
    schema: type[schemas.Body], example: dict, description: str, required: bool = True
) -> dict:
    schema.model_validate(example)  # an example that no longer fits its body fails here
    return {
        "required": required,
        "description": description,
        "content": {JSON: {"schema": ref(schema), "example": example}},
    }


def path_item(path: str, **operations: dict) -> dict:
    """A path with its operations (by lower-case HTTP method) and its path parameters."""
    names = re.findall(r"{(\w+)}", path)
    if not names:
        return operations
    return {"parameters": [ref(PATH_PARAMETERS[n], "parameters") for n in names], **operations}


# Paths. --------------------------------------------------------------------------------------

NO_CLUSTER = "No registered cluster has this cluster id."
NO_LINK = "No registered cluster has this id, or it has no link of this name."
NO_MIRROR = NO_LINK + " Or the topic is not a mirror topic of the link."
NO_FLOW = NO_LINK + " Or the link has no merge flow of this name."

MIRROR_ACTION_ERRORS = {
    400: "Neither or both of mirror_topic_names and mirror_topic_name_pattern, no topic named, "
    "an invalid regex, or a bad validate_only.",
    404: NO_LINK,
}


def mirror_action(operation_id: str, verb: str, what: str) -> dict:
    return operation(
        operation_id,
        LINKING_TAG,
        f"{verb.capitalize()} the mirror topics",
        "mirror.manage",
        ok(schemas.AlterMirrorsResult, "Each topic's outcome, with its lags after the action."),
        description=f"{what} A topic that cannot be {verb}d (e.g. unknown, or in the wrong "
        f"state) is reported in its own entry, with HTTP 200 for the call. {NOT_YET}",
        parameters=("ValidateOnly",),
        body=request(
            schemas.AlterMirrorsRequest,
            {"mirror_topic_names": ["orders", "payments"]},
            "The mirror topics, by name or by a regex.",
        ),
        errors=MIRROR_ACTION_ERRORS,
    )


PATHS = {
    "/openapi.json": path_item(
        "/openapi.json",
        get=operation(
            "getOpenApiDocument",
            DOCS_TAG,
            "This document",
            "console.view",
            ok(schemas.OpenApiDocument, "The OpenAPI 3.1 document of this API."),
        ),
    ),
    "/clusters": path_item(
        "/clusters",
        get=operation(
            "listKafkaClusters",
            CLUSTER_TAG,
            "List the registered clusters",
            "console.view",
            ok(schemas.KafkaClusterList, "The registered clusters, by name."),
        ),
    ),
    CLUSTER: path_item(
        CLUSTER,
        get=operation(
            "getKafkaCluster",
            CLUSTER_TAG,
            "Get a registered cluster",
            "console.view",
            ok(schemas.KafkaCluster, "The cluster."),
            errors={404: NO_CLUSTER},
        ),
    ),
    CLUSTER + "/links": path_item(
        CLUSTER + "/links",
        get=operation(
            "listKafkaLinks",
            LINKING_TAG,
            "List all cluster links in the destination cluster",
            "console.view",
            ok(schemas.KafkaLinkDataList, "The links into the cluster."),
            errors={404: NO_CLUSTER},
        ),
        post=operation(
            "createKafkaLink",
            LINKING_TAG,
            "Create a cluster link",
            "link.manage",
            NO_CONTENT,
            description="A destination-initiated link into this cluster from the cluster its "
            "bootstrap.servers reach. With validate_link (the default) the source must answer "
            "with the link's own credentials, and be source_cluster_id if that is given.",
            parameters=(
                parameter("link_name", "query", string(), "The name of the new link.", "my-link")
                | {"required": True},
                "ValidateOnly",
                flag(
                    "validate_link",
                    "Check now that the source answers with the link's credentials and is the "
                    "expected cluster.",
                    default=True,
                ),
            ),
            body=request(
                schemas.CreateLinkRequest,
                {
                    "source_cluster_id": "MkU3OEVBNTcwNTJENDM2Qk",
                    "configs": [
                        {"name": "bootstrap.servers", "value": "source-broker:9092"},
                        {"name": "metadata.max.age.ms", "value": "5000"},
                    ],
                },
                "The source and the link configs.",
            ),
            errors={
                400: "No link_name, an invalid name or config, a source that cannot be reached "
                "with the link's credentials, or a source-initiated or bidirectional link.",
                404: NO_CLUSTER,
                409: "A link of this name exists, or bootstrap.servers reaches another cluster "
                "than source_cluster_id.",
            },
        ),
    ),
    CLUSTER + "/links/-/mirrors": path_item(
        CLUSTER + "/links/-/mirrors",
        get=operation(
            "listKafkaMirrorTopics",
            LINKING_TAG,
            "List mirror topics",
            "console.view",
            ok(schemas.KafkaMirrorDataList, "The mirror topics, with their lags read now."),
            description="All mirror topics in the cluster, of every link.",
            parameters=("MirrorStatus",),
            errors={400: "An unknown mirror_status.", 404: NO_CLUSTER},
        ),
    ),
    LINK: path_item(
        LINK,
        get=operation(
            "getKafkaLink",
            LINKING_TAG,
            "Describe the cluster link",
            "console.view",
            ok(schemas.KafkaLinkData, "The link."),
            parameters=(
                flag("include_tasks", "Accepted for compatibility; tasks is always empty."),
            ),
            errors={400: "A bad include_tasks.", 404: NO_LINK},
        ),
        delete=operation(
            "deleteKafkaLink",
            LINKING_TAG,
            "Delete the cluster link",
            "link.delete",
            NO_CONTENT,
            description="Refused while mirror topics of the link still mirror, unless forced: "
            "force fails them over first, so they become ordinary writable topics.",
            parameters=(
                flag(
                    "force",
                    "Fail over the link's mirror topics (they become writable), then delete.",
                ),
                "ValidateOnly",
            ),
            errors={
                400: "A bad force or validate_only.",
                404: NO_LINK,
                409: "The link still has mirror topics and force is false, or a forced "
                "failover was refused.",
                503: "A cluster did not answer during a forced deletion.",
            },
        ),
    ),
    LINK + "/configs": path_item(
        LINK + "/configs",
        get=operation(
            "listKafkaLinkConfigs",
            LINKING_TAG,
            "List all configs of the cluster link",
            "console.view",
            ok(schemas.KafkaLinkConfigDataList, "Every config that is set or has a default."),
            errors={404: NO_LINK},
        ),
    ),
    LINK + "/schemas": path_item(
        LINK + "/schemas",
        get=operation(
            "getSchemaSync",
            LINKING_TAG,
            "Describe the link's schema sync (*Isthmus*)",
            "console.view",
            ok(schemas.SchemaSyncData, "Its settings, its last run and each subject's state."),
            description="Subjects go from the source cluster's schema registry to the "
            "destination's under the same ids and versions (IMPORT mode there); a mirrored "
            "record whose schema id the destination lacks waits for it.",
            errors={404: NO_LINK},
        ),
    ),
    LINK + "/schemas:sync": path_item(
        LINK + "/schemas:sync",
        post=operation(
            "syncSchemasNow",
            LINKING_TAG,
            "Sync the link's schemas now (*Isthmus*)",
            "link.manage",
            ok(schemas.SchemaSyncData, "Asked for: a whole run starts within a second.", 202),
            errors={404: NO_LINK, 409: "The link does not sync schemas (schema.sync.enable)."},
        ),
    ),
    LINK + "/schemas:promote": path_item(
        LINK + "/schemas:promote",
        post=operation(
            "promoteSchemaSubjects",
            LINKING_TAG,
            "Make synced schema subjects writable on the destination (*Isthmus*)",
            "mirror.stop",
            {
                **ok(schemas.SchemaSyncData, "Done: the subjects are PROMOTED, READWRITE there."),
                **ok(schemas.StopMirrorsResult, "It waits for approval: the request.", 202),
                **NO_CONTENT,
            },
            description="As a topic's promote does for its own subjects: the subjects leave "
            "IMPORT mode on the destination's registry, so producers can register new versions "
            "there, and the link syncs them no more. Subject to the link's approval policy.",
            parameters=("ValidateOnly",),
            body=request(
                schemas.PromoteSubjectsRequest,
                {"subjects": ["orders-value", "common-types"], "reason": "cut over"},
                "The synced subjects to make writable, and why.",
            ),
            errors={
                400: "No subject named, or one the link does not sync.",
                404: NO_LINK,
                409: "The link does not sync schemas.",
            },
        ),
    ),
    LINK + "/configs:alter": path_item(
        LINK + "/configs:alter",
        put=operation(
            "updateKafkaLinkConfigBatch",
            LINKING_TAG,
            "Batch alter cluster link configs",
            "link.manage",
            NO_CONTENT,
            description="Set and reset several configs at once, all or nothing. New "
            "connection settings must still reach the link's source. Setting "
            "cluster.link.paused pauses or resumes the link.",
            parameters=("ValidateOnly",),
            body=request(
                schemas.AlterLinkConfigBatchRequest,
                {
                    "data": [
                        {"name": "metadata.max.age.ms", "value": "60000"},
                        {"name": "topic.config.sync.include", "operation": "DELETE"},
                    ]
                },
                "The configs to set and reset.",
            ),
            errors={
                400: "No data, an unknown, read-only or invalid config, or a connection "
                "change the source refuses.",
                404: NO_LINK,
                409: "New bootstrap.servers reach another cluster than the link's source.",
            },
        ),
    ),
    LINK + "/configs/{config_name}": path_item(
        LINK + "/configs/{config_name}",
        get=operation(
            "getKafkaLinkConfigs",
            LINKING_TAG,
            "Describe the config under the cluster link",
            "console.view",
            ok(schemas.KafkaLinkConfigData, "The config."),
            errors={404: NO_LINK + " Or an unknown config, or one not set without a default."},
        ),
        put=operation(
            "updateKafkaLinkConfig",
            LINKING_TAG,
            "Alter the config under the cluster link",
            "link.manage",
            NO_CONTENT,
            body=request(
                schemas.UpdateLinkConfigRequest, {"value": "60000"}, "The config's new value."
            ),
            errors={
                400: "No value, or one the config does not take; a read-only config.",
                404: NO_LINK + " Or an unknown config.",
                409: "New bootstrap.servers reach another cluster than the link's source.",
            },
        ),
        delete=operation(
            "deleteKafkaLinkConfig",
            LINKING_TAG,
            "Reset the given config to its default value",
            "link.manage",
            NO_CONTENT,
            errors={
                400: "A config that cannot be reset (read-only, or bootstrap.servers).",
                404: NO_LINK + " Or an unknown config.",
                409: "The reset connection settings reach another cluster than the source.",
            },
        ),
    ),
    LINK + "/mirrors": path_item(
        LINK + "/mirrors",
        get=operation(
            "listKafkaMirrorTopicsUnderLink",
            LINKING_TAG,
            "List mirror topics",
            "console.view",
            ok(schemas.KafkaMirrorDataList, "The link's mirror topics, with their lags read now."),
            description="All mirror topics under the link.",
            parameters=("MirrorStatus",),
            errors={400: "An unknown mirror_status.", 404: NO_LINK},
        ),
        post=operation(
            "createKafkaMirrorTopic",
            LINKING_TAG,
            "Create a mirror topic",
            "mirror.manage",
            NO_CONTENT,
            description="Create a read-only topic in the destination cluster mirroring a "
            "topic of the link's source, with the source's partition count.",
            parameters=("ValidateOnly",),
            body=request(
                schemas.CreateMirrorTopicRequest,
                {
                    "source_topic_name": "orders",
                    "configs": [{"name": "retention.ms", "value": "604800000"}],
                },
                "The source topic, and optionally the mirror's settings.",
            ),
            errors={
                400: "No or an invalid source_topic_name, a mirror_topic_name that does not "
                "fit it, a strictly mirrored config, or settings the destination refuses.",
                404: NO_LINK + " Or the source topic does not exist.",
                409: "The topic exists on the destination or is a mirror already, or the "
                "link has FAILED.",
                503: "A cluster did not answer; nothing was left behind.",
            },
        ),
    ),
    LINK + "/mirrors:pause": path_item(
        LINK + "/mirrors:pause",
        post=mirror_action(
            "updateKafkaMirrorTopicsPause",
            "pause",
            "Stop fetching for these mirror topics; they stay read-only.",
        ),
    ),
    LINK + "/mirrors:resume": path_item(
        LINK + "/mirrors:resume",
        post=mirror_action(
            "updateKafkaMirrorTopicsResume",
            "resume",
            "Fetch again for these paused mirror topics.",
        ),
    ),
    **{
        LINK + f"/mirrors:{verb}": path_item(
            LINK + f"/mirrors:{verb}",
            post=operation(
                f"updateKafkaMirrorTopics{verb.title().replace('-', '')}",
                LINKING_TAG,
                f"{verb.replace('-', ' ').capitalize()} the mirror topics",
                "mirror.stop",
                {
                    **ok(schemas.StopMirrorsResult, "Done at once: each topic's outcome and lags."),
                    **ok(schemas.StopMirrorsResult, "Waits for approval: the request made.", 202),
                },
                description=what,
                parameters=("ValidateOnly", "TruncationData")
                if verb == "truncate-and-restore"
                else ("ValidateOnly",),
                body=request(
                    schemas.StopMirrorsRequest,
                    {"mirror_topic_names": ["orders"], "reason": "planned migration"},
                    "The mirror topics, a reason, and (an admin's failover) break_glass.",
                ),
                errors=MIRROR_ACTION_ERRORS,
            ),
        )
        for verb, what in (
            ("promote", "Stop mirroring once every partition has lag 0: a writable topic."),
            ("failover", "Stop mirroring at once, whatever the lag or the source's health."),
            (
                "reverse-and-start-mirror",
                "On a bidirectional link: fence the source topic, let the mirror catch up, make "
                "it writable and its old source a mirror of it, at the same offsets (nothing is "
                "copied). A fence a super user wrote past puts everything back.",
            ),
            (
                "reverse-and-pause-mirror",
                "The same, the old source's new mirror left paused.",
            ),
            (
                "truncate-and-restore",
                "On a bidirectional link, run on the old primary after a failover: its records "
                "past the failover point set aside in a quarantine topic, the topic made anew "
                "with the rest at the same offsets, then a mirror of the promoted topic (only "
                "its delta is copied across). include_partition_level_truncation_data=true gives "
                "each partition's offset_truncated_to and messages_truncated.",
            ),
        )
    },
    CLUSTER + "/approval-requests": path_item(
        CLUSTER + "/approval-requests",
        get=operation(
            "listApprovalRequests",
            LINKING_TAG,
            "List approval requests",
            "console.view",
            ok(schemas.ApprovalRequestList, "The cluster's requests, newest first."),
            errors={400: "An unknown state.", 404: NO_CLUSTER},
        ),
    ),
    CLUSTER + "/approval-requests/{request_id}": path_item(
        CLUSTER + "/approval-requests/{request_id}",
        get=operation(
            "readApprovalRequest",
            LINKING_TAG,
            "Describe an approval request",
            "console.view",
            ok(schemas.ApprovalRequest, "The request, with its progress and result."),
            errors={404: "No such request."},
        ),
    ),
    **{
        CLUSTER + f"/approval-requests/{{request_id}}:{verb}": path_item(
            CLUSTER + f"/approval-requests/{{request_id}}:{verb}",
            post=operation(
                f"{verb}ApprovalRequest",
                LINKING_TAG,
                f"{verb.capitalize()} an approval request",
                action,
                ok(schemas.ApprovalRequest, "The request after the change."),
                body=request(
                    schemas.RejectRequest,
                    {"reason": "not during the sale"},
                    "Why it is rejected (optional).",
                    required=False,
                )
                if verb == "reject"
                else None,
                errors={404: "No such request.", 409: "The request is no longer PENDING."},
            ),
        )
        for verb, action in (
            ("approve", "request.approve"),
            ("reject", "request.approve"),
            ("withdraw", "mirror.stop"),
        )
    },
    LINK + "/mirrors/{mirror_topic_name}": path_item(
        LINK + "/mirrors/{mirror_topic_name}",
        get=operation(
            "readKafkaMirrorTopic",
            LINKING_TAG,
            "Describe the mirror topic",
            "console.view",
            ok(schemas.KafkaMirrorData, "The mirror topic, with its lags read now."),
            errors={404: NO_MIRROR},
        ),
    ),
    # Isthmus's own (Confluent has no verification): kafka-mirrors --verify.
    LINK + "/mirrors:verify": path_item(
        LINK + "/mirrors:verify",
        post=operation(
            "verifyMirrorTopics",
            LINKING_TAG,
            "Compare the mirror topics with their sources (*Isthmus*)",
            "mirror.manage",
            ok(schemas.MirrorVerificationList, "Started: each topic's verification.", 202),
            description="Every record of a range of source offsets compared with the mirror's: "
            "partition, offset (through the offset translation), key, value, headers and "
            "timestamp, and nothing else in the mirror. A worker runs each; read its progress "
            "and result at its own path.",
            body=request(
                schemas.VerifyMirrorsRequest,
                {"mirror_topic_names": ["orders"], "from_offset": 0},
                "The mirror topics, and the range of source offsets (default: all of them).",
            ),
            errors={
                **MIRROR_ACTION_ERRORS,
                400: "Neither or both of mirror_topic_names and mirror_topic_name_pattern, or "
                "a range that is not offsets from before to after.",
                409: "A mirror that no longer follows its source (promoted, failed over), or "
                "one whose verification still runs or waits for a worker; none is started then.",
            },
        ),
    ),
    LINK + "/mirrors/{mirror_topic_name}/verifications": path_item(
        LINK + "/mirrors/{mirror_topic_name}/verifications",
        get=operation(
            "listMirrorTopicVerifications",
            LINKING_TAG,
            "List the mirror topic's verifications (*Isthmus*)",
            "console.view",
            ok(schemas.MirrorVerificationList, "The newest 20, newest first."),
            errors={404: NO_MIRROR},
        ),
    ),
    LINK + "/mirrors/{mirror_topic_name}/verifications/{verification_id}": path_item(
        LINK + "/mirrors/{mirror_topic_name}/verifications/{verification_id}",
        get=operation(
            "readMirrorTopicVerification",
            LINKING_TAG,
            "Describe a verification (*Isthmus*)",
            "console.view",
            ok(schemas.MirrorVerification, "Its progress, or what it found."),
            errors={404: NO_MIRROR + " Or it has no verification of this id."},
        ),
    ),
    # Isthmus's own (Confluent has none): merge flows, offsets not preserved.
    LINK + "/flows": path_item(
        LINK + "/flows",
        get=operation(
            "listMergeFlows",
            LINKING_TAG,
            "List the link's merge flows (*Isthmus*)",
            "console.view",
            ok(schemas.MergeFlowDataList, "The link's merge flows, with their progress."),
            errors={404: NO_LINK},
        ),
        post=operation(
            "createMergeFlow",
            LINKING_TAG,
            "Create a merge flow (*Isthmus*)",
            "flow.manage",
            {**ok(schemas.MergeFlowData, "The flow, created.", 201), **NO_CONTENT},
            parameters=("ValidateOnly",),
            description="Copy a source topic over the link into an ordinary, writable topic "
            "of the destination, of any name (made with the source's partitions when it does "
            "not exist), exactly once; every record keeps its key, value, headers and "
            "timestamp and gains an isthmus.origin header; a record whose origin is the "
            "destination cluster is never copied there. Offsets are NOT preserved. With "
            "validate_only: 204, nothing made.",
            body=request(
                schemas.CreateMergeFlowRequest,
                {"source_topic_name": "topic2", "destination_topic_name": "topic2.replica"},
                "The source topic, and optionally the destination topic, name and mapping.",
            ),
            errors={
                400: "A name Kafka would refuse, an internal topic, an unknown mapping, or "
                "one-to-one between unequal partition counts.",
                404: NO_LINK + " Or the source has no such topic.",
                409: "The same flow exists, the destination topic is a mirror, or the link "
                "has FAILED.",
                503: "A cluster did not answer.",
            },
        ),
    ),
    CLUSTER + "/flows:import-replicator": path_item(
        CLUSTER + "/flows:import-replicator",
        post=operation(
            "importReplicatorConfiguration",
            LINKING_TAG,
            "Create the merge flows of a Replicator configuration (*Isthmus*)",
            "flow.manage",
            ok(schemas.ReplicatorImport, "The flows it stands for, and what was made."),
            description="A Replicator connector's configuration (Connect's JSON or properties): "
            "topic.whitelist / topic.include, topic.regex, topic.blacklist / topic.exclude, "
            "topic.rename.format, src.kafka.bootstrap.servers (a link into this cluster must "
            "read from it) and dest.kafka.bootstrap.servers (this cluster). With validate_only "
            "nothing is made: the plan alone. Flows that exist are left as they are.",
            parameters=("ValidateOnly",),
            body=request(
                schemas.ImportReplicatorRequest,
                {"configuration": "topic.whitelist=topic2\ntopic.rename.format=${topic}.replica"},
                "The configuration, as pasted.",
            ),
            errors={
                400: "Not a configuration, no topic selected, or a cluster it does not name.",
                404: NO_CLUSTER,
                503: "A cluster did not answer.",
            },
        ),
    ),
    LINK + "/flows/{flow_name}": path_item(
        LINK + "/flows/{flow_name}",
        get=operation(
            "readMergeFlow",
            LINKING_TAG,
            "Describe a merge flow (*Isthmus*)",
            "console.view",
            ok(schemas.MergeFlowData, "The flow, with its progress per partition."),
            errors={404: NO_FLOW},
        ),
        delete=operation(
            "deleteMergeFlow",
            LINKING_TAG,
            "Delete a merge flow (*Isthmus*)",
            "flow.manage",
            NO_CONTENT,
            description="Its destination topic stays, with every record copied into it.",
            errors={404: NO_FLOW},
        ),
    ),
    **{
        LINK + f"/flows/{{flow_name}}:{verb}": path_item(
            LINK + f"/flows/{{flow_name}}:{verb}",
            post=operation(
                f"{verb}MergeFlow",
                LINKING_TAG,
                f"{verb.capitalize()} a merge flow (*Isthmus*)",
                "flow.manage",
                ok(schemas.MergeFlowData, "The flow after the change."),
                errors={404: NO_FLOW, 409: f"The flow cannot be {verb}d from its state."},
            ),
        )
        for verb in ("pause", "resume")
    },
}

NO_TOPIC = NO_CLUSTER + " Or it has no topic of this name."
NO_GROUP = NO_CLUSTER + " Or it has no consumer group of this id."
UNANSWERED = "The cluster did not answer."


# Kafka REST's reads of the cluster itself, for Confluent's tools: path, operationId, tag,
# summary, answer, what it holds, what a 404 there means.
READS = [
    (
        CLUSTER + "/topics",
        "listKafkaTopics",
        TOPICS_TAG,
        "List the topics",
        schemas.KafkaTopicList,
        "Every topic of the cluster, internal ones too.",
        NO_CLUSTER,
    ),
    (
        TOPIC,
        "getKafkaTopic",
        TOPICS_TAG,
        "Describe a topic",
        schemas.KafkaTopic,
        "The topic.",
        NO_TOPIC,
    ),
    (
        TOPIC + "/partitions",
        "listKafkaPartitions",
        TOPICS_TAG,
        "List a topic's partitions",
        schemas.KafkaPartitionList,
        "Its partitions, with their leaders and replicas.",
        NO_TOPIC,
    ),
    (
        TOPIC + "/partitions/{partition_id}",
        "getKafkaPartition",
        TOPICS_TAG,
        "Describe a partition",
        schemas.KafkaPartition,
        "The partition.",
        NO_TOPIC + " Or it has no such partition.",
    ),
    (
        TOPIC + "/partitions/{partition_id}/replicas",
        "listKafkaReplicas",
        TOPICS_TAG,
        "List a partition's replicas",
        schemas.KafkaReplicaList,
        "Its replicas: broker, leader or not, in sync or not.",
        NO_TOPIC + " Or it has no such partition.",
    ),
    (
        TOPIC + "/configs",
        "listKafkaTopicConfigs",
        TOPICS_TAG,
        "List a topic's configs",
        schemas.KafkaTopicConfigList,
        "Every config of the topic, set or not, with its source (sensitive values null).",
        NO_TOPIC,
    ),
    (
        TOPIC + "/configs/{name}",
        "getKafkaTopicConfig",
        TOPICS_TAG,
        "Describe a topic config",
        schemas.KafkaTopicConfig,
        "The config.",
        NO_TOPIC + " Or it has no such config.",
    ),
    (
        CLUSTER + "/consumer-groups",
        "listKafkaConsumerGroups",
        GROUPS_TAG,
        "List the consumer groups",
        schemas.KafkaConsumerGroupList,
        "Every consumer group the cluster knows.",
        NO_CLUSTER,
    ),
    (
        GROUP,
        "getKafkaConsumerGroup",
        GROUPS_TAG,
        "Describe a consumer group",
        schemas.KafkaConsumerGroup,
        "The group.",
        NO_GROUP,
    ),
    (
        GROUP + "/consumers",
        "listKafkaConsumers",
        GROUPS_TAG,
        "List a group's consumers",
        schemas.KafkaConsumerList,
        "Its members.",
        NO_GROUP,
    ),
    (
        GROUP + "/lags",
        "listKafkaConsumerLags",
        GROUPS_TAG,
        "List a group's lag per partition",
        schemas.KafkaConsumerLagList,
        "Per partition it committed an offset for: that offset, the end, the lag.",
        NO_GROUP,
    ),
    (
        GROUP + "/lags/{topic_name}/partitions/{partition_id}",
        "getKafkaConsumerLag",
        GROUPS_TAG,
        "Get a group's lag on one partition",
        schemas.KafkaConsumerLag,
        "Its committed offset there, the end, the lag.",
        NO_GROUP + " Or it committed no offset on that partition.",
    ),
    (
        GROUP + "/lag-summary",
        "getKafkaConsumerGroupLagSummary",
        GROUPS_TAG,
        "Sum up a group's lag",
        schemas.KafkaConsumerGroupLagSummary,
        "Its largest lag, where, and its total.",
        NO_GROUP + " Or it committed no offset.",
    ),
]


def read(operation_id: str, tag: str, summary: str, shape, what: str, missing: str, **more) -> dict:
    """A read of the cluster itself (Kafka REST's own paths, for Confluent's tools)."""
    return operation(
        operation_id,
        tag,
        summary,
        "console.view",
        ok(shape, what),
        errors={404: missing, 503: UNANSWERED},
        **more,
    )


PATHS.update({row[0]: path_item(row[0], get=read(*row[1:])) for row in READS})
PATHS[CLUSTER + "/acls"] = path_item(
    CLUSTER + "/acls",
    get=read(
        "getKafkaAcls",
        ACLS_TAG,
        "List the ACLs",
        schemas.KafkaAclList,
        "The ACLs matching the filter (none without an authorizer).",
        NO_CLUSTER,
        parameters=tuple(f"Acl{n.title().replace('_', '')}" for n in ACL_FILTERS),
    ),
)


SPEC: dict = {
    "openapi": "3.1.0",
    "info": {
        "title": "Isthmus API",
        "version": "3",
        "summary": "Cluster links and mirror topics, on Kafka REST v3 paths.",
        "description": DESCRIPTION,
        "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
    },
    "servers": [
        {"url": "/kafka/v3", "description": "Every registered cluster."},
        {
            "url": "/kafka/{cluster_name}/v3",
            "description": "One registered cluster alone, as Confluent Server's REST serves "
            "one: GET /clusters lists it only, and other clusters' paths answer 404. Give "
            "Confluent's tools `--url <console>/kafka/<cluster name>`.",
            "variables": {
                "cluster_name": {
                    "default": "destination",
                    "description": "The name the cluster was registered under.",
                }
            },
        },
    ],
    "tags": [
        {"name": CLUSTER_TAG, "description": "The clusters registered in Isthmus."},
        {"name": LINKING_TAG, "description": "Cluster links and their mirror topics."},
        {"name": TOPICS_TAG, "description": "The cluster's topics, read only."},
        {"name": GROUPS_TAG, "description": "The cluster's consumer groups, read only."},
        {"name": ACLS_TAG, "description": "The cluster's ACLs, read only."},
        {"name": DOCS_TAG, "description": "This document."},
    ],
    "security": [{"bearerAuth": []}, {"basicAuth": []}, {"sessionAuth": []}],
    "paths": PATHS,
    "components": {
        "schemas": schemas.components(),
        "parameters": PARAMETERS,
        "securitySchemes": {
            "bearerAuth": {
                "type": "http",
                "scheme": "bearer",
                "description": "A personal API token (isthmus_…), made on the account page; "
                "it acts with its owner's role.",
            },
            "basicAuth": {
                "type": "http",
                "scheme": "basic",
                "description": "Your user name, and one of your API tokens as the password "
                "(never your account password).",
            },
            "sessionAuth": {
                "type": "apiKey",
                "in": "cookie",
                "name": "sessionid",
                "description": "The console's login session. Every call but GET also needs the "
                "X-CSRFToken header, set to the csrftoken cookie.",
            },
        },
    },
}


# Checked against its own shape once, when the module loads, not on every call.
DOCUMENT = schemas.OpenApiDocument.model_validate(SPEC)


@endpoint(GET="console.view")
def document(request):
    return respond(DOCUMENT)
