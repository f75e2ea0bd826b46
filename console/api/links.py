"""Kafka REST v3 cluster-link endpoints: /kafka/v3/clusters/{cluster_id}/links…"""

from __future__ import annotations

from collections import Counter

from console.api.approvals import submitted
from console.api.base import (
    ApiError,
    cluster,
    endpoint,
    field,
    flag,
    json_body,
    name_values,
    no_content,
    self_url,
)
from console.api.schemas import (
    CategoryCount,
    KafkaLinkConfigData,
    KafkaLinkConfigDataList,
    KafkaLinkData,
    KafkaLinkDataList,
    LinkHalf,
    LinkStream,
    SchemaSubjectData,
    SchemaSyncData,
    respond,
)
from infra.kafka_admin import kafka_uuid
from replication.actions import approvals
from replication.core import link_configs
from replication.core.errors import ReplicationError
from replication.engine import status
from replication.governance import audit
from replication.models import ClusterLink, KafkaCluster, MirrorTopic
from replication.schemas import schema_links
from replication.topics.link_creation import (
    create_or_join,
    delete_source_half,
    join_as_source,
    joined_words,
    names_a_source_half,
    source_half,
    source_halves,
)
from replication.topics.links import (
    alter_link_configs,
    describe_link_configs,
    get_link,
    list_links,
    other_half,
    other_halves,
)

BASE = "/kafka/v3/clusters/{cluster_id}/links"

# Mirror states counted per category, as Cluster Linking's link description does.
_CATEGORIES = {
    "ACTIVE": "ACTIVE",
    "PAUSED": "PAUSED",
    "LINK_PAUSED": "PAUSED",
    "PENDING_MIRROR": "PENDING",
    "PENDING_SYNCHRONIZE": "PENDING",
    "PENDING_SETUP_FOR_RESTORE": "PENDING",
    "PENDING_RESTORE": "PENDING",
    "PENDING_STOPPED": "PENDING",
    "FAILED": "IN_ERROR",
    "SOURCE_UNAVAILABLE": "IN_ERROR",
    "STOPPED": "NOT_APPLICABLE",
}


def link_data(request, link: ClusterLink, half: ClusterLink | None) -> KafkaLinkData:
    """The link as the API answers it, with `half`, its other half if it is bidirectional."""
    mirrors: list[MirrorTopic] = list(link.mirrors.all())
    partitions: Counter[str] = Counter()
    for mirror in mirrors:
        partitions[_CATEGORIES[mirror.state]] += mirror.num_partitions
    path = f"{BASE.format(cluster_id=link.destination.cluster_id)}/{link.name}"
    stream = status.status(link)
    return KafkaLinkData(
        metadata=self_url(request, path),
        source_cluster_id=link.source_cluster_id,
        link_name=link.name,
        link_id=str(link.link_id),
        cluster_link_id=kafka_uuid(link.link_id),
        topic_names=[m.mirror_topic for m in mirrors],
        link_state=link.state,
        engine=link.engine,
        link_error=link.error_code,
        link_error_message=link.error_message or None,
        category_counts=[
            CategoryCount(state_category=category, count=count)
            for category, count in sorted(partitions.items())
        ],
        stream=LinkStream(
            state=stream.state,
            records_per_sec=stream.records_per_sec,
            bytes_per_sec=stream.bytes_per_sec,
            failures=stream.failures,
            error=stream.error,
        ),
        rpo_target_seconds=link.rpo_target_seconds,
        rpo_breached_since=link.rpo_breached_at,
        flow_names=[f.name for f in link.flows.all()],
        other_half=_half_data(half),
    )


def _half_data(half: ClusterLink | None) -> LinkHalf | None:
    if half is None:
        return None
    return LinkHalf(
        cluster_id=half.destination.cluster_id,
        cluster_name=half.destination.name,
        link_id=str(half.link_id),
        link_state=half.state,
        engine=half.engine,
        topic_names=[m.mirror_topic for m in half.mirrors.all()],
        flow_names=[f.name for f in half.flows.all()],
    )


def _source_cluster_id(body: dict, configs: dict[str, str]) -> str | None:
    """The create's source: source_cluster_id, or remote_cluster_id, the other cluster of a
    bidirectional link as Confluent's tools name it (`confluent kafka link create
    --remote-cluster`)."""
    source = field(body, "source_cluster_id", str)
    remote = field(body, "remote_cluster_id", str)
    if not remote:
        return source
    mode = str(configs.get("link.mode", "DESTINATION")).strip().upper()
    if mode != "BIDIRECTIONAL":
        raise ApiError(
            400,
            f"remote_cluster_id names the other cluster of a bidirectional link, and this "
            f"link's link.mode is {mode}: add link.mode=BIDIRECTIONAL to its configs, or give "
            "source_cluster_id for a link that copies one way into this cluster.",
        )
    if source and source != remote:
        raise ApiError(
            400,
            f"source_cluster_id ({source}) and remote_cluster_id ({remote}) name different "
            "clusters; a bidirectional link's other cluster is one: give one of them.",
        )
    return remote


def config_data(request, link: ClusterLink, entry: link_configs.ConfigEntry) -> KafkaLinkConfigData:
    path = f"{BASE.format(cluster_id=link.destination.cluster_id)}/{link.name}/configs/{entry.name}"
    return KafkaLinkConfigData(
        metadata=self_url(request, path),
        cluster_id=link.destination.cluster_id,
        link_name=link.name,
        name=entry.name,
        value="" if entry.is_sensitive else (entry.value or ""),
        is_default=entry.is_default,
        is_read_only=entry.is_read_only,
        read_only=entry.is_read_only,
        is_sensitive=entry.is_sensitive,
        sensitive=entry.is_sensitive,
        source=entry.source,
    )


def source_half_data(request, link: ClusterLink) -> KafkaLinkData:
    """A source-initiated link as its source lists it: its source half, naming its
    destination."""
    source_id = link.source_cluster_id
    return link_data(request, link, None).model_copy(
        update={
            "metadata": self_url(request, f"{BASE.format(cluster_id=source_id)}/{link.name}"),
            "source_cluster_id": None,
            "destination_cluster_id": link.destination.cluster_id,
        }
    )


def _on(on: KafkaCluster, name: str) -> tuple[ClusterLink, bool]:
    """The link named `name` on cluster `on`: into it, else the source half made on it (True);
    not found, in the words of a link into it."""
    try:
        return get_link(on, name), False
    except ReplicationError:
        half = source_half(on, name)
        if half is None:
            raise
        return half, True


@endpoint(GET="console.view", POST="link.manage")
def links(request, cluster_id):
    destination = cluster(cluster_id)
    if request.method == "GET":
        found = list(list_links(destination).prefetch_related("flows"))
        halves = other_halves(found)
        return respond(
            KafkaLinkDataList(
                metadata=self_url(request, request.path),
                data=[link_data(request, link, halves.get(link.pk)) for link in found]
                + [source_half_data(request, link) for link in source_halves(destination)],
            )
        )
    name = request.GET.get("link_name")
    if not name:
        raise ApiError(400, "Give the link's name as the link_name query parameter.")
    body = json_body(request)
    configs = name_values(body)
    remote_destination = field(body, "destination_cluster_id", str)
    if names_a_source_half(configs, remote_destination):  # this cluster is its source
        creation = join_as_source(
            audit.Actor.from_request(request),
            destination,
            name,
            configs,
            remote_destination,
            validate_only=flag(request, "validate_only"),
        )
    else:
        creation = create_or_join(
            audit.Actor.from_request(request),
            destination,
            name,
            configs,
            source_cluster_id=_source_cluster_id(body, configs),
            validate_only=flag(request, "validate_only"),
            validate_link=flag(request, "validate_link", default=True),
            cluster_link_id=field(body, "cluster_link_id", str),
        )
    if not creation.made:
        # Confluent answers a create with 204 and no body; the second side's create of a
        # bidirectional link made no link, so it is told so with the link as a GET answers it
        # (its clients take any 2xx) and in a Warning header for those that read no body.
        answer = respond(link_data(request, creation.link, other_half(creation.link)))
        answer["Warning"] = f'299 isthmus "{joined_words(creation.link)}"'
        return answer
    return no_content()


@endpoint(GET="console.view", DELETE="link.delete")
def link(request, cluster_id, link_name):
    on = cluster(cluster_id)
    found, is_source_half = _on(on, link_name)
    if request.method == "GET":
        flag(request, "include_tasks")  # accepted; Isthmus reports no per-task breakdown yet
        if is_source_half:
            return respond(source_half_data(request, found))
        return respond(link_data(request, found, other_half(found)))
    if is_source_half:  # the connection from the source ends; its destination half waits
        delete_source_half(
            audit.Actor.from_request(request),
            on,
            link_name,
            validate_only=flag(request, "validate_only"),
        )
        return no_content()
    submission = approvals.submit(
        audit.Actor.from_request(request),
        found,
        approvals.Action.DELETE_LINK,
        reason=request.GET.get("reason", ""),
        force=flag(request, "force"),
        validate_only=flag(request, "validate_only"),
    )
    if submission.request is None:
        return no_content()
    return submitted(request, "IsthmusDeleteLink", submission, [])


@endpoint(GET="console.view")
def link_configs_list(request, cluster_id, link_name):
    found = get_link(cluster(cluster_id), link_name)
    return respond(
        KafkaLinkConfigDataList(
            metadata=self_url(request, request.path),
            data=[config_data(request, found, e) for e in describe_link_configs(found)],
        )
    )


@endpoint(GET="console.view", PUT="link.manage", DELETE="link.manage")
def link_config(request, cluster_id, link_name, config_name):
    found = get_link(cluster(cluster_id), link_name)
    if config_name not in link_configs.KEYS:
        raise ApiError(
            404,
            f"Unknown link config {config_name!r}. "
            f"Valid link configs: {', '.join(link_configs.KEYS)}.",
        )
    actor = audit.Actor.from_request(request)
    if request.method == "PUT":
        value = field(json_body(request), "value", str, required=True)
        alter_link_configs(actor, found, {config_name: value})
        return no_content()
    if request.method == "DELETE":
        alter_link_configs(actor, found, {}, [config_name])
        return no_content()
    for entry in describe_link_configs(found):
        if entry.name == config_name:
            return respond(config_data(request, found, entry))
    raise ApiError(404, f"Link config {config_name!r} is not set and has no default.")


@endpoint(PUT="link.manage")
def link_configs_alter(request, cluster_id, link_name):
    found = get_link(cluster(cluster_id), link_name)
    to_set: dict[str, str] = {}
    to_delete: list[str] = []
    for i, entry in enumerate(field(json_body(request), "data", list, required=True)):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ApiError(400, f'data[{i}] must be an object like {{"name": "k", "value": "v"}}.')
        operation = str(entry.get("operation") or "SET").upper()
        if operation == "DELETE":
            to_delete.append(entry["name"])
        elif operation == "SET":
            if not isinstance(entry.get("value"), str):
                raise ApiError(400, f"data[{i}] ({entry['name']}) needs a string value to SET.")
            to_set[entry["name"]] = entry["value"]
        else:
            raise ApiError(400, f"data[{i}].operation must be SET or DELETE, not {operation!r}.")
    alter_link_configs(
        audit.Actor.from_request(request),
        found,
        to_set,
        to_delete,
        validate_only=flag(request, "validate_only"),
    )
    return no_content()


def schema_sync_data(request, link: ClusterLink) -> SchemaSyncData:
    found = schema_links.status(link)
    return SchemaSyncData(
        metadata=self_url(
            request, f"{BASE.format(cluster_id=link.destination.cluster_id)}/{link.name}/schemas"
        ),
        link_name=link.name,
        enabled=found.enabled,
        interval_ms=found.interval_ms,
        subject_filters=found.subject_filters or None,
        context=found.context or None,
        source_context=found.source_context or None,
        synced_at=found.synced_at.isoformat() if found.synced_at else None,
        error_message=found.problem or None,
        subjects=[
            SchemaSubjectData(
                subject=s.subject,
                state=s.state,
                versions=s.versions,
                compatibility=s.compatibility or None,
                message=s.message or None,
                synced_at=s.synced_at.isoformat(),
                changed_at=s.changed_at.isoformat(),
            )
            for s in found.subjects
        ],
    )


@endpoint(GET="console.view")
def link_schemas(request, cluster_id, link_name):
    return respond(schema_sync_data(request, get_link(cluster(cluster_id), link_name)))


@endpoint(POST="link.manage")
def link_schemas_sync(request, cluster_id, link_name):
    found = get_link(cluster(cluster_id), link_name)
    schema_links.sync_soon(audit.Actor.from_request(request), found)
    found.refresh_from_db()
    return respond(schema_sync_data(request, found), status=202)


@endpoint(POST="mirror.stop")
def link_schemas_promote(request, cluster_id, link_name):
    found = get_link(cluster(cluster_id), link_name)
    body = json_body(request)
    subjects = field(body, "subjects", list, required=True)
    if not all(isinstance(s, str) for s in subjects):
        raise ApiError(400, "subjects must be a list of subject names (strings).")
    submission = approvals.submit(
        audit.Actor.from_request(request),
        found,
        approvals.Action.PROMOTE_SUBJECTS,
        reason=field(body, "reason", str) or "",
        params={"subjects": subjects},
        validate_only=flag(request, "validate_only"),
    )
    if submission.request is not None:
        return submitted(request, "IsthmusPromoteSchemaSubjects", submission, [])
    if flag(request, "validate_only"):
        return no_content()
    found.refresh_from_db()
    return respond(schema_sync_data(request, found))
