"""*Isthmus*'s own paths (Confluent has none): merge flows, a source topic copied over a link
into an ordinary, writable topic of any name, exactly once, offsets not preserved."""

from __future__ import annotations

from console.api.approvals import submitted
from console.api.base import cluster, endpoint, field, flag, json_body, no_content, self_url
from console.api.links import BASE
from console.api.schemas import (
    FlowConsumerOffsets,
    FlowGroup,
    FlowPartition,
    MergeFlowData,
    MergeFlowDataList,
    PlannedFlow,
    ReplicatorImport,
    respond,
)
from replication.actions import approvals, replicator_import
from replication.governance import audit
from replication.models import ApprovalRequest, MergeFlow
from replication.topics import flow_offsets, merge_flows, offset_sync
from replication.topics.links import get_link


def flow_data(request, flow: MergeFlow, found: merge_flows.FlowStatus) -> MergeFlowData:
    path = (
        f"{BASE.format(cluster_id=flow.destination.cluster_id)}/{flow.link.name}/flows/{flow.name}"
    )
    return MergeFlowData(
        metadata=self_url(request, path),
        flow_name=flow.name,
        link_name=flow.link.name,
        source_topic_name=flow.source_topic,
        destination_topic_name=flow.destination_topic,
        partition_mapping=flow.mapping,
        state=flow.state,
        records_copied=found.records,
        records_skipped=found.skipped,
        lag=found.lag,
        partitions=[
            FlowPartition(
                partition_id=p,
                next_source_offset=v["next"],
                source_end_offset=v["source_end"],
                lag=v["lag"],
            )
            for p, v in sorted(found.partitions.items())
        ],
        error_message=found.error or None,
        created_topic=flow.created_topic,
        state_time=flow.state_time.isoformat(),
        consumer_offsets=consumer_offsets(flow),
    )


def consumer_offsets(flow: MergeFlow) -> FlowConsumerOffsets:
    rule = flow_offsets.rule(flow)
    return FlowConsumerOffsets(
        sync_enabled=offset_sync.enabled(flow.link),
        translated=not rule.refused,
        reverse_flow_name=rule.back.name if rule.back else None,
        reason=rule.refused or None,
        groups=[
            FlowGroup(
                group_name=g.group,
                destination_group_name=g.destination_group,
                state=g.state,
                offsets={str(p): o for p, o in sorted(g.offsets.items())},
                may_repeat=g.may_repeat,
                reason=g.reason or None,
            )
            for g in flow_offsets.groups(flow)
        ],
    )


@endpoint(GET="console.view", POST="flow.manage")
def flows(request, cluster_id, link_name):
    link = get_link(cluster(cluster_id), link_name)
    if request.method == "GET":
        found = link.flows.select_related("link__destination", "destination")
        statuses = merge_flows.statuses(link)  # the link's heartbeat, read once
        return respond(
            MergeFlowDataList(
                metadata=self_url(request, request.path),
                data=[flow_data(request, f, statuses[f.name]) for f in found],
            )
        )
    body = json_body(request)
    params = {
        "source_topic": field(body, "source_topic_name", str, required=True),
        "destination_topic": field(body, "destination_topic_name", str),
        "flow": field(body, "flow_name", str),
        "mapping": field(body, "partition_mapping", str),
    }
    submission = approvals.submit(
        audit.Actor.from_request(request),
        link,
        approvals.Action.CREATE_FLOW,
        reason=field(body, "reason", str) or "",
        params=params,
        validate_only=flag(request, "validate_only"),
    )
    if submission.request is not None:
        return submitted(request, "IsthmusCreateMergeFlow", submission, [])
    if flag(request, "validate_only"):
        return no_content()
    flow = merge_flows.get_flow(link, params["flow"] or f"{link.name}.{params['source_topic']}")
    return respond(flow_data(request, flow, merge_flows.status(flow)), status=201)


@endpoint(GET="console.view", DELETE="flow.manage")
def flow(request, cluster_id, link_name, flow_name):
    found = merge_flows.get_flow(get_link(cluster(cluster_id), link_name), flow_name)
    if request.method == "DELETE":
        submission = approvals.submit(
            audit.Actor.from_request(request),
            found.link,
            approvals.Action.DELETE_FLOW,
            reason=request.GET.get("reason", ""),
            params={"flow": found.name},
            validate_only=flag(request, "validate_only"),
        )
        if submission.request is not None:
            return submitted(request, "IsthmusDeleteMergeFlow", submission, [])
        return no_content()
    return respond(flow_data(request, found, merge_flows.status(found)))


ACTIONS = {"pause": merge_flows.pause_flow, "resume": merge_flows.resume_flow}


@endpoint(POST="flow.manage")
def flow_action(request, cluster_id, link_name, flow_name, action):
    found = merge_flows.get_flow(get_link(cluster(cluster_id), link_name), flow_name)
    changed = ACTIONS[action](audit.Actor.from_request(request), found)
    return respond(flow_data(request, changed, merge_flows.status(changed)))


@endpoint(POST="flow.manage")
def import_replicator(request, cluster_id):
    """The merge flows a Replicator configuration stands for; made unless validate_only."""
    destination = cluster(cluster_id)
    text = field(json_body(request), "configuration", str, required=True)
    made: dict = {}
    if flag(request, "validate_only"):
        plan = replicator_import.plan(destination, text)
    else:
        plan, made = replicator_import.create(audit.Actor.from_request(request), destination, text)
    flows = []
    for source, into in plan.flows:
        outcome = made.get((source, into))
        flows.append(
            PlannedFlow(
                source_topic_name=source,
                destination_topic_name=into,
                exists=f"{source} into {into}" in plan.existing,
                created=isinstance(outcome, MergeFlow),
                approval_request_id=outcome.pk if isinstance(outcome, ApprovalRequest) else None,
                error_message=str(outcome) if isinstance(outcome, Exception) else None,
            )
        )
    return respond(
        ReplicatorImport(
            connector=plan.connector, link_name=plan.link.name, flows=flows, notes=plan.notes
        )
    )
