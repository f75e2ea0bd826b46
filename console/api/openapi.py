"""The OpenAPI document of the JSON API, served at /kafka/v3/openapi.json."""

from __future__ import annotations

import re

from django.http import JsonResponse

from console.access import POLICY, ROLES
from console.api.base import ERROR_CODES, endpoint
from replication import link_configs
from replication.models import ClusterLink, MirrorTopic

JSON = "application/json"
CLUSTER_TAG = "Cluster (v3)"
LINKING_TAG = "Cluster Linking (v3)"
DOCS_TAG = "API"

CLUSTER = "/clusters/{cluster_id}"
LINK = CLUSTER + "/links/{link_name}"

NOT_YET = (
    "Isthmus offers :pause and :resume; :promote and :failover are not offered yet "
    "(they come with approvals), nor are the reverse and truncate actions."
)

DESCRIPTION = f"""\
Cluster links and mirror topics of the clusters registered in Isthmus, on the paths and with
the bodies of Confluent's Kafka REST v3 Cluster Linking API, so its clients and scripts work.

**Authentication.** Send a personal API token as `Authorization: Bearer <token>` (make one on
your account page), or call from the console in a browser: the session cookie then counts,
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


def ref(name: str, kind: str = "schemas") -> dict:
    return {"$ref": f"#/components/{kind}/{name}"}


def scalar(kind: str | list[str], description: str = "", **extra) -> dict:
    schema = {"type": kind, **extra}
    if description:
        schema["description"] = description
    return schema


def string(description: str = "", **extra) -> dict:
    return scalar("string", description, **extra)


def integer(description: str = "", **extra) -> dict:
    return scalar("integer", description, **extra)


def boolean(description: str = "", **extra) -> dict:
    return scalar("boolean", description, **extra)


def nullable(kind: str, description: str = "", **extra) -> dict:
    return scalar([kind, "null"], description, **extra)


def array(items: dict, description: str = "") -> dict:
    return scalar("array", description, items=items)


def record(description: str, properties: dict, required: list[str] | None = None) -> dict:
    """An object schema; every property is required unless `required` names fewer."""
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


def kind(name: str) -> dict:
    return string("The type of this object.", const=name)


def listing(name: str, item: str, description: str) -> dict:
    return record(
        description,
        {
            "kind": kind(name),
            "metadata": ref("ResourceCollectionMetadata"),
            "data": array(ref(item)),
        },
    )


def name_value_list(description: str) -> dict:
    return array(ref("ConfigNameValue"), description)


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
    "ValidateOnly": flag(
        "validate_only", "Check that the action would succeed, without performing it."
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
}


# Responses. ----------------------------------------------------------------------------------

ERROR_EXAMPLES = {
    400: "Query parameter validate_only must be true or false, not 'yes'.",
    401: "Authentication required: send an API token as 'Authorization: Bearer <token>' "
    "(make one on your account page in the console).",
    403: "Your role does not allow link.manage (viewer).",
    404: "No cluster link named 'my-link' on cluster destination. "
    "List the links to see their names.",
    409: "A cluster link named 'my-link' already exists on destination.",
    415: "Send the body as application/json, not text/plain.",
    503: "The source cluster did not answer. Timed out. Nothing was changed.",
}


def error(status: int, description: str) -> dict:
    response = {
        "description": description,
        "content": {
            JSON: {
                "schema": ref("Error"),
                "example": {"error_code": ERROR_CODES[status], "message": ERROR_EXAMPLES[status]},
            }
        },
    }
    if status == 401:
        response["headers"] = {
            "WWW-Authenticate": {
                "description": 'Always `Bearer realm="isthmus"`.',
                "schema": string(),
            }
        }
    return response


def ok(schema: str, description: str) -> dict:
    return {"200": {"description": description, "content": {JSON: {"schema": ref(schema)}}}}


NO_CONTENT = {"204": {"description": "Done; the response has no body."}}

BAD_BODY = "The body is not a JSON object or a field has the wrong type."


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


def request(schema: str, example: dict, description: str) -> dict:
    return {
        "required": True,
        "description": description,
        "content": {JSON: {"schema": ref(schema), "example": example}},
    }


def path_item(path: str, **operations: dict) -> dict:
    """A path with its operations (by lower-case HTTP method) and its path parameters."""
    names = re.findall(r"{(\w+)}", path)
    if not names:
        return operations
    return {"parameters": [ref(PATH_PARAMETERS[n], "parameters") for n in names], **operations}


# Schemas. ------------------------------------------------------------------------------------

LAG_EXTENSION = "*Isthmus*: read from the clusters now; -1 if it could not be read."

SCHEMAS = {
    # *Isthmus*: approval requests (promote, failover and link deletion wait for approvers).
    "ApprovalRequest": {
        "type": "object",
        "required": ["kind", "id", "action", "link_name", "state", "approvals_required"],
        "properties": {
            "kind": string(enum=["IsthmusApprovalRequest"]),
            "metadata": {"type": "object"},
            "id": integer("The request's id."),
            "action": string(enum=["promote", "failover", "delete-link"]),
            "link_name": string(),
            "mirror_topic_names": array(string()),
            "force": boolean("A link deletion that fails the link's mirrors over first."),
            "reason": string(),
            "requester": string(),
            "state": string(
                enum=[
                    "PENDING",
                    "APPROVED",
                    "EXECUTED",
                    "FAILED",
                    "REJECTED",
                    "WITHDRAWN",
                    "EXPIRED",
                ]
            ),
            "approvals_required": integer(),
            "approved_by": array(string()),
            "created_at": string(),
            "expires_at": string(),
            "decided_by": string(),
            "decision_reason": string(),
            "progress": string(),
            "plan": array({"type": "object"}),
            "result": array({"type": "object"}),
            "console_url": string(),
        },
    },
    "ApprovalRequestList": {
        "type": "object",
        "required": ["kind", "data"],
        "properties": {
            "kind": string(enum=["IsthmusApprovalRequestList"]),
            "metadata": {"type": "object"},
            "data": array(ref("ApprovalRequest")),
        },
    },
    "StopMirrorsResult": {
        "type": "object",
        "required": ["kind", "data", "approval_request"],
        "properties": {
            "kind": string(enum=["KafkaPromoteMirror", "KafkaFailoverMirror", "IsthmusDeleteLink"]),
            "metadata": {"type": "object"},
            "data": array({"type": "object"}),
            "approval_request": {"oneOf": [{"type": "null"}, ref("ApprovalRequest")]},
            "approvals_needed": integer(),
            "note": string(),
        },
    },
    "Error": record(
        "The Kafka REST v3 error envelope.",
        {
            "error_code": integer("The HTTP status times 100 plus a number, e.g. 40401."),
            "message": string("What was wrong, and what to do about it."),
        },
    ),
    "ResourceMetadata": record(
        "Where this object lives.", {"self": string("Its URL.", format="uri")}
    ),
    "ResourceCollectionMetadata": record(
        "Where this list lives.", {"self": string("Its URL.", format="uri")}
    ),
    "ConfigNameValue": record(
        "One config, as a name and a string value.",
        {"name": string(), "value": string()},
    ),
    "OpenApiDocument": record(
        "An OpenAPI 3.1 document.",
        {"openapi": string(), "info": {"type": "object"}, "paths": {"type": "object"}},
    ),
    # Clusters.
    "KafkaCluster": record(
        "A registered cluster.",
        {
            "kind": kind("KafkaCluster"),
            "metadata": ref("ResourceMetadata"),
            "cluster_id": string("The Kafka cluster id."),
            "name": string("*Isthmus*: the name the cluster was registered under."),
            "links": record(
                "Related resources.",
                {"related": string("The cluster's links (as a URL).", format="uri")},
            ),
        },
    ),
    "KafkaClusterList": listing("KafkaClusterList", "KafkaCluster", "The registered clusters."),
    # Links.
    "KafkaLinkData": record(
        "A cluster link into this (the destination) cluster.",
        {
            "kind": kind("KafkaLinkData"),
            "metadata": ref("ResourceMetadata"),
            "source_cluster_id": nullable("string", "The id of the cluster the link copies from."),
            "destination_cluster_id": nullable(
                "string", "Always null: Isthmus links are destination-initiated."
            ),
            "remote_cluster_id": nullable(
                "string", "Always null: Isthmus has no bidirectional links."
            ),
            "link_name": string(),
            "link_id": string(
                "The link's UUID, in its canonical form (deprecated in Confluent's API; "
                "cluster_link_id is the same UUID as Kafka prints ids).",
                format="uuid",
            ),
            "cluster_link_id": string("The link's UUID in Kafka's URL-safe base64 form."),
            "topic_names": array(string(), "The link's mirror topics."),
            "link_state": string(enum=list(ClusterLink.State.values)),
            "link_error": string("NO_ERROR, or why the link is UNAVAILABLE or FAILED."),
            "link_error_message": nullable("string"),
            "tasks": array(
                {"type": "object"},
                "Always empty: Isthmus reports no per-task breakdown yet.",
            ),
            "category_counts": array(
                record(
                    "The number of mirror partitions in a state category.",
                    {
                        "state_category": string(
                            enum=["ACTIVE", "IN_ERROR", "NOT_APPLICABLE", "PAUSED", "PENDING"]
                        ),
                        "count": integer(),
                    },
                ),
                "Mirror partitions by state category; categories with none are left out.",
            ),
            "stream": record(
                "*Isthmus*: the link's stream, which copies its mirrors.",
                {
                    "state": string(
                        enum=["STOPPED", "STARTING", "RUNNING", "RESTARTING", "FAILED", "UNKNOWN"]
                    ),
                    "records_per_sec": {"type": "number"},
                    "bytes_per_sec": {"type": "number"},
                    "failures": integer("Failures in a row; restarts back off, then FAILED."),
                    "error": string("The stream's last error, if any."),
                },
            ),
        },
    ),
    "KafkaLinkDataList": listing("KafkaLinkDataList", "KafkaLinkData", "Cluster links."),
    "KafkaLinkConfigData": record(
        "One link config, set or defaulted.",
        {
            "kind": kind("KafkaLinkConfigData"),
            "metadata": ref("ResourceMetadata"),
            "cluster_id": string("The destination cluster's id."),
            "link_name": string(),
            "name": string(),
            "value": nullable("string", "The value; null for a sensitive config."),
            "is_default": boolean("Not set on the link: the default applies."),
            "is_read_only": boolean("Shown, never changed (or set only at creation)."),
            "is_sensitive": boolean("A secret: stored encrypted, never shown."),
            "source": string(enum=["DYNAMIC_CLUSTER_LINK_CONFIG", "DEFAULT_CONFIG"]),
            "synonyms": array({"type": "object"}, "Always empty."),
        },
    ),
    "KafkaLinkConfigDataList": listing(
        "KafkaLinkConfigDataList", "KafkaLinkConfigData", "A link's configs."
    ),
    # Mirror topics.
    "MirrorLag": record(
        "One partition's lag.",
        {
            "partition": integer(),
            "lag": integer("Source high watermark minus the mirror's log end offset; -1 unknown."),
            "last_source_fetch_offset": integer(
                "The source high watermark at the last fetch; -1 until the stream reports it."
            ),
            "dest_log_end_offset": integer(
                f"The mirror partition's log end offset. {LAG_EXTENSION}"
            ),
            "source_high_watermark": integer(
                f"The source partition's high watermark. {LAG_EXTENSION}"
            ),
            "time_since_last_fetch_ms": integer(
                "*Isthmus*: milliseconds since the last fetch from the source; -1 unknown "
                "(as `kafka-mirrors --describe` prints it)."
            ),
            "offset_mode": {
                "type": "string",
                "enum": ["IDENTICAL", "TRANSLATED"],
                "description": "*Isthmus*: IDENTICAL while the mirror's offsets equal the "
                "source's; TRANSLATED once they differ (the mirror started above offset 0, or "
                "compaction, transactions or retention left gaps), with a durable translation.",
            },
        },
    ),
    "KafkaMirrorData": record(
        "A mirror topic: a read-only copy of a source topic, kept up to date by its link.",
        {
            "kind": kind("KafkaMirrorData"),
            "metadata": ref("ResourceMetadata"),
            "link_name": string(),
            "link_id": string("*Isthmus*: the link's UUID.", format="uuid"),
            "mirror_topic_name": string(),
            "source_topic_name": string(),
            "source_topic_id": string(
                "*Isthmus*: the source topic's id when the mirror was made; a source topic "
                "recreated under the same name fails the mirror (SOURCE_TOPIC_ID_CHANGED)."
            ),
            "num_partitions": integer(),
            "mirror_lags": array(ref("MirrorLag"), "Per partition, read from both clusters now."),
            "mirror_status": string(enum=list(MirrorTopic.State.values)),
            "mirror_topic_error": string(enum=list(MirrorTopic.Error.values)),
            "state_time_ms": integer("When the mirror entered its state (epoch milliseconds)."),
            "mirror_state_transition_errors": array(
                record(
                    "Why the mirror is in its state.",
                    {"error_code": string(), "error_message": string()},
                )
            ),
            "read_only_enforced": boolean(
                "*Isthmus*: whether the destination enforces the mirror's read-only ACLs; false "
                "when it runs without an authorizer, so clients could write to the mirror."
            ),
            "status_errors": array(
                string(),
                "*Isthmus*: why offsets could not be read from a cluster just now (the lags then "
                "show -1); empty when both answered.",
            ),
        },
    ),
    "KafkaMirrorDataList": listing("KafkaMirrorDataList", "KafkaMirrorData", "Mirror topics."),
    "AlterMirrorsData": record(
        "One mirror topic's outcome.",
        {
            "mirror_topic_name": string(),
            "error_code": nullable("integer", "null on success, else the HTTP status, e.g. 409."),
            "error_message": nullable("string", "null on success, else why."),
            "mirror_lags": array(ref("MirrorLag"), "Always empty."),
        },
    ),
    "AlterMirrorsResult": record(
        "The outcome of a mirror action, per topic: one topic's refusal leaves the others be.",
        {
            "kind": string(enum=["KafkaPauseMirror", "KafkaResumeMirror"]),
            "metadata": ref("ResourceCollectionMetadata"),
            "data": array(ref("AlterMirrorsData")),
        },
    ),
    # Request bodies.
    "CreateLinkRequest": record(
        "A destination-initiated link; its name is the link_name query parameter.",
        {
            "source_cluster_id": string(
                "The source's cluster id: checked against the cluster bootstrap.servers reaches; "
                "required with validate_link=false."
            ),
            "configs": name_value_list(
                "Link configs; bootstrap.servers is required. Valid names: "
                + ", ".join(link_configs.KEYS)
                + "."
            ),
            "destination_cluster_id": string("Refused: only for source-initiated links."),
            "remote_cluster_id": string("Refused: only for bidirectional links."),
            "cluster_link_id": string("Refused: only for bidirectional links."),
        },
        required=["configs"],
    ),
    "UpdateLinkConfigRequest": record("A new value.", {"value": string()}),
    "AlterLinkConfigBatchRequest": record(
        "Configs to set and to reset, all or nothing.",
        {
            "data": array(
                record(
                    "Set (the default) or reset one config.",
                    {
                        "name": string(),
                        "value": string("Needed to SET."),
                        "operation": string(enum=["SET", "DELETE"], default="SET"),
                    },
                    required=["name"],
                )
            )
        },
    ),
    "CreateMirrorTopicRequest": record(
        "A mirror of a source topic.",
        {
            "source_topic_name": string(),
            "mirror_topic_name": string(
                "If given, must be the source topic name with the link's cluster.link.prefix."
            ),
            "replication_factor": integer("Default: the destination cluster's default.", minimum=1),
            "configs": name_value_list(
                "Topic config overrides; strictly mirrored configs (e.g. cleanup.policy) are "
                "refused."
            ),
        },
        required=["source_topic_name"],
    ),
    "AlterMirrorsRequest": {
        "type": "object",
        "description": "The mirror topics to act on: a list of names or a regex.",
        "properties": {
            "mirror_topic_names": array(string(), "The mirror topics, by name."),
            "mirror_topic_name_pattern": string(
                "A regex that the whole name of each mirror topic of the link must match."
            ),
        },
        "oneOf": [
            {"required": ["mirror_topic_names"]},
            {"required": ["mirror_topic_name_pattern"]},
        ],
    },
}


# Paths. --------------------------------------------------------------------------------------

NO_CLUSTER = "No registered cluster has this cluster id."
NO_LINK = "No registered cluster has this id, or it has no link of this name."
NO_MIRROR = NO_LINK + " Or the topic is not a mirror topic of the link."

MIRROR_ACTION_ERRORS = {
    400: "Neither or both of mirror_topic_names and mirror_topic_name_pattern, no topic named, "
    "an invalid regex, or a bad validate_only.",
    404: NO_LINK,
}


def mirror_action(operation_id: str, verb: str, kind_name: str, what: str) -> dict:
    return operation(
        operation_id,
        LINKING_TAG,
        f"{verb.capitalize()} the mirror topics",
        "mirror.manage",
        ok("AlterMirrorsResult", f"Each topic's outcome (kind {kind_name})."),
        description=f"{what} A topic that cannot be {verb}d (e.g. unknown, or in the wrong "
        f"state) is reported in its own entry, with HTTP 200 for the call. {NOT_YET}",
        parameters=("ValidateOnly",),
        body=request(
            "AlterMirrorsRequest",
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
            ok("OpenApiDocument", "The OpenAPI 3.1 document of this API."),
        ),
    ),
    "/clusters": path_item(
        "/clusters",
        get=operation(
            "listKafkaClusters",
            CLUSTER_TAG,
            "List the registered clusters",
            "console.view",
            ok("KafkaClusterList", "The registered clusters, by name."),
        ),
    ),
    CLUSTER: path_item(
        CLUSTER,
        get=operation(
            "getKafkaCluster",
            CLUSTER_TAG,
            "Get a registered cluster",
            "console.view",
            ok("KafkaCluster", "The cluster."),
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
            ok("KafkaLinkDataList", "The links into the cluster."),
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
                "CreateLinkRequest",
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
            ok("KafkaMirrorDataList", "The mirror topics, with their lags read now."),
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
            ok("KafkaLinkData", "The link."),
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
            ok("KafkaLinkConfigDataList", "Every config that is set or has a default."),
            errors={404: NO_LINK},
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
                "AlterLinkConfigBatchRequest",
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
            ok("KafkaLinkConfigData", "The config."),
            errors={404: NO_LINK + " Or an unknown config, or one not set without a default."},
        ),
        put=operation(
            "updateKafkaLinkConfig",
            LINKING_TAG,
            "Alter the config under the cluster link",
            "link.manage",
            NO_CONTENT,
            body=request("UpdateLinkConfigRequest", {"value": "60000"}, "The config's new value."),
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
            ok("KafkaMirrorDataList", "The link's mirror topics, with their lags read now."),
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
                "CreateMirrorTopicRequest",
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
            "KafkaPauseMirror",
            "Stop fetching for these mirror topics; they stay read-only.",
        ),
    ),
    LINK + "/mirrors:resume": path_item(
        LINK + "/mirrors:resume",
        post=mirror_action(
            "updateKafkaMirrorTopicsResume",
            "resume",
            "KafkaResumeMirror",
            "Fetch again for these paused mirror topics.",
        ),
    ),
    **{
        LINK + f"/mirrors:{verb}": path_item(
            LINK + f"/mirrors:{verb}",
            post=operation(
                f"updateKafkaMirrorTopics{verb.capitalize()}",
                LINKING_TAG,
                f"{verb.capitalize()} the mirror topics",
                "mirror.stop",
                {
                    **ok("StopMirrorsResult", "Done at once: each topic's outcome and lags."),
                    "202": {
                        "description": "Waits for approval: the request made.",
                        "content": {JSON: {"schema": ref("StopMirrorsResult")}},
                    },
                },
                description=what,
                parameters=("ValidateOnly",),
                body=request(
                    "StopMirrorsRequest",
                    {"mirror_topic_names": ["orders"], "reason": "planned migration"},
                    "The mirror topics, a reason, and (an admin's failover) break_glass.",
                ),
                errors=MIRROR_ACTION_ERRORS,
            ),
        )
        for verb, what in (
            ("promote", "Stop mirroring once every partition has lag 0: a writable topic."),
            ("failover", "Stop mirroring at once, whatever the lag or the source's health."),
        )
    },
    CLUSTER + "/approval-requests": path_item(
        CLUSTER + "/approval-requests",
        get=operation(
            "listApprovalRequests",
            LINKING_TAG,
            "List approval requests",
            "console.view",
            ok("ApprovalRequestList", "The cluster's requests, newest first."),
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
            ok("ApprovalRequest", "The request, with its progress and result."),
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
                ok("ApprovalRequest", "The request after the change."),
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
            ok("KafkaMirrorData", "The mirror topic, with its lags read now."),
            errors={404: NO_MIRROR},
        ),
    ),
}

SPEC: dict = {
    "openapi": "3.1.0",
    "info": {
        "title": "Isthmus API",
        "version": "3",
        "summary": "Cluster links and mirror topics, on Kafka REST v3 paths.",
        "description": DESCRIPTION,
        "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
    },
    "servers": [{"url": "/kafka/v3"}],
    "tags": [
        {"name": CLUSTER_TAG, "description": "The clusters registered in Isthmus."},
        {"name": LINKING_TAG, "description": "Cluster links and their mirror topics."},
        {"name": DOCS_TAG, "description": "This document."},
    ],
    "security": [{"bearerAuth": []}, {"sessionAuth": []}],
    "paths": PATHS,
    "components": {
        "schemas": SCHEMAS,
        "parameters": PARAMETERS,
        "securitySchemes": {
            "bearerAuth": {
                "type": "http",
                "scheme": "bearer",
                "description": "A personal API token (isthmus_…), made on the account page; "
                "it acts with its owner's role.",
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


@endpoint(GET="console.view")
def document(request):
    return JsonResponse(SPEC)
