"""Kafka REST v3 mirror-topic endpoints: …/links/{link_name}/mirrors…, …/links/-/mirrors."""

from __future__ import annotations

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
from console.api.links import BASE
from console.api.schemas import (
    AlterMirrorsData,
    AlterMirrorsResult,
    KafkaMirrorData,
    KafkaMirrorDataList,
    MirrorAction,
    MirroredBy,
    MirrorLag,
    MirrorStateTransitionError,
    PartitionTruncation,
    StopMirrorData,
    respond,
)
from replication.actions import approvals, bulk
from replication.actions.operations import OPERATIONS
from replication.core.errors import ReplicationError
from replication.cutover import mirror_actions, restore_plan
from replication.governance import audit
from replication.models import MirrorTopic
from replication.observe import mirror_differences, verification_sweep
from replication.observe.lag import MirrorStatus, describe_mirror, describe_mirrors
from replication.topics.links import get_link
from replication.topics.mirrors import create_mirror, get_mirror, list_mirrors, records_lost

# The mirror actions of the API, by the name after the colon.
ACTIONS = bulk.SWITCHES
# Those that stop a mirror (a reverse too: its source then mirrors it), subject to approval:
# the actions that name mirror topics.
STOPS = tuple(str(action) for action, op in OPERATIONS.items() if op.names_mirrors)


def lags_data(partitions, verified: dict[int, tuple[int, int]] | None = None) -> list[MirrorLag]:
    """Each partition's lag as Kafka REST's MirrorLag, with Isthmus's extensions: the lag in
    time, the destination log end offset, the source high watermark, the time since the last
    fetch, and
    how far the background verification got (`verified`, from `verification_sweep.verified`)."""
    verified = verified or {}
    return [
        MirrorLag(
            partition=p.partition,
            lag=p.lag,
            lag_ms=p.lag_ms,
            last_source_fetch_offset=p.last_fetch_source_high_watermark,
            dest_log_end_offset=p.dest_log_end_offset,
            source_high_watermark=p.source_high_watermark,
            time_since_last_fetch_ms=p.time_since_last_fetch_ms,
            offset_mode=p.offset_mode,
            verified_offset=verified.get(p.partition, (0, -1))[1],
        )
        for p in partitions
    ]


def _mirror_url(request, link, name: str) -> dict:
    return self_url(
        request, f"{BASE.format(cluster_id=link.destination.cluster_id)}/{link.name}/mirrors/{name}"
    )


def mirror_data(
    request, status: MirrorStatus, standing: mirror_actions.Standing | None = None
) -> KafkaMirrorData:
    """A mirror as Kafka REST shows it, with the lag read from both clusters now, and (Isthmus)
    the actions it offers now (`standing`, read here if not given).

    Its lag entries (`lags_data`) carry what `kafka-mirrors --describe` prints.
    """
    mirror = status.mirror
    standing = standing or mirror_actions.standing(mirror)
    transition_errors = []
    if mirror.error_message:
        transition_errors.append(
            MirrorStateTransitionError(
                error_code=mirror.mirror_error, error_message=mirror.error_message
            )
        )
    return KafkaMirrorData(
        metadata=_mirror_url(request, mirror.link, mirror.mirror_topic),
        link_name=mirror.link.name,
        link_id=str(mirror.link.link_id),
        mirror_topic_name=mirror.mirror_topic,
        source_topic_name=mirror.source_topic,
        source_topic_id=mirror.source_topic_id,
        num_partitions=len(status.partitions) or mirror.num_partitions,
        mirror_lags=lags_data(status.partitions, verification_sweep.verified(mirror)),
        max_lag_ms=status.max_lag_ms,
        rpo_target_seconds=mirror.link.rpo_target_seconds,
        mirror_status=mirror.state,
        mirror_topic_error=mirror.mirror_error,
        state_time_ms=int(mirror.state_time.timestamp() * 1000),
        mirror_state_transition_errors=transition_errors,
        read_only_enforced=mirror.read_only_enforced,
        status_errors=status.errors,
        verified=verification_sweep.summary(mirror),
        differing_records=mirror.differing_records,
        differences=mirror_differences.differences(mirror),
        records_lost=records_lost(mirror),
        actions=[
            MirrorAction(action=c.action, available=c.available, reason=c.reason)
            for c in standing.choices
        ],
        mirrored_by=_mirrored_by(standing.mirrored_by),
    )


def _mirrored_by(other: MirrorTopic | None) -> MirroredBy | None:
    if other is None:
        return None
    return MirroredBy(
        cluster_id=other.destination.cluster_id,
        cluster_name=other.destination.name,
        link_name=other.link.name,
        mirror_topic_name=other.mirror_topic,
        mirror_status=other.state,
    )


def _states(request) -> list[str] | None:
    wanted = request.GET.get("mirror_status")
    if not wanted:
        return None
    if wanted not in MirrorTopic.State.values:
        raise ApiError(
            400,
            f"Unknown mirror_status {wanted!r}. Use one of: {', '.join(MirrorTopic.State.values)}.",
        )
    return [wanted]


def _mirror_list(request, mirrors):
    statuses = describe_mirrors(mirrors)
    standings = mirror_actions.standings(s.mirror for s in statuses)
    return respond(
        KafkaMirrorDataList(
            metadata=self_url(request, request.path),
            data=[mirror_data(request, s, standings[s.mirror.pk]) for s in statuses],
        )
    )


@endpoint(GET="console.view")
def all_mirrors(request, cluster_id):
    destination = cluster(cluster_id)
    return _mirror_list(request, list_mirrors(destination=destination, states=_states(request)))


@endpoint(GET="console.view", POST="mirror.manage")
def mirrors(request, cluster_id, link_name):
    link = get_link(cluster(cluster_id), link_name)
    if request.method == "GET":
        return _mirror_list(request, list_mirrors(link=link, states=_states(request)))
    body = json_body(request)
    create_mirror(
        audit.Actor.from_request(request),
        link,
        field(body, "source_topic_name", str, required=True),
        mirror_topic=field(body, "mirror_topic_name", str),
        replication_factor=field(body, "replication_factor", int),
        configs=name_values(body),
        validate_only=flag(request, "validate_only"),
    )
    return no_content()


@endpoint(GET="console.view")
def mirror(request, cluster_id, link_name, mirror_topic_name):
    destination = cluster(cluster_id)
    found = get_mirror(destination, mirror_topic_name, get_link(destination, link_name))
    return respond(mirror_data(request, describe_mirror(found)))


def named_mirrors(body: dict, link) -> list[str]:
    names = field(body, "mirror_topic_names", list)
    pattern = field(body, "mirror_topic_name_pattern", str)
    if (names is None) == (pattern is None):
        raise ApiError(
            400, "Give either mirror_topic_names (a list) or mirror_topic_name_pattern (a regex)."
        )
    return bulk.select(link, names, pattern)


@endpoint(POST="mirror.manage")
def mirrors_action(request, cluster_id, link_name, action):
    """Pause or resume mirrors; each topic's outcome is reported on its own, with HTTP 200."""
    destination = cluster(cluster_id)
    link = get_link(destination, link_name)
    names = named_mirrors(json_body(request), link)
    validate_only = flag(request, "validate_only")
    actor = audit.Actor.from_request(request)
    results, acted = [], []
    for name, done in bulk.switch(actor, link, names, action, validate_only=validate_only):
        outcome = AlterMirrorsData(
            metadata=_mirror_url(request, link, name),
            mirror_topic_name=name,
            error_code=None,
            error_message=None,
            mirror_lags=[],
        )
        if isinstance(done, ReplicationError):
            outcome.error_code, outcome.error_message = done.status, str(done)
        else:
            acted.append(done)
        results.append(outcome)
    # Each topic acted on shows its lags afterwards, as Confluent's tools print them.
    lags = {s.mirror.mirror_topic: lags_data(s.partitions) for s in describe_mirrors(acted)}
    for outcome in results:
        outcome.mirror_lags = lags.get(outcome.mirror_topic_name, [])
    return respond(AlterMirrorsResult(metadata=self_url(request, request.path), data=results))


def _stop_data(request, link, outcome, by_partition: bool) -> StopMirrorData:
    data = StopMirrorData(
        metadata=_mirror_url(request, link, outcome.mirror_topic),
        mirror_topic_name=outcome.mirror_topic,
        error_code=outcome.status if outcome.error else None,
        error_message=outcome.error or None,
        mirror_status=outcome.state,
        mirror_lags=lags_data(outcome.lags),
    )
    if isinstance(outcome, restore_plan.RestoreOutcome):  # Confluent's names for what it cut
        data.messages_truncated = outcome.messages_truncated
        data.quarantine_topic_name = outcome.quarantine or None
        if by_partition:
            data.partition_level_truncation_data = [
                PartitionTruncation(**p) for p in outcome.partitions
            ]
    return data


@endpoint(POST="mirror.stop")
def mirrors_stop(request, cluster_id, link_name, action):
    """Promote or fail over mirrors: at once where the caller may act without approval (each
    topic's outcome reported on its own, HTTP 200), else as an approval request (HTTP 202)."""
    link = get_link(cluster(cluster_id), link_name)
    body = json_body(request)
    submission = approvals.submit(
        audit.Actor.from_request(request),
        link,
        action,
        named_mirrors(body, link),
        field(body, "reason", str, default=""),
        break_glass=field(body, "break_glass", bool, default=False),
        validate_only=flag(request, "validate_only"),
        # Isthmus's own: the gateway whose clients follow the cutover (docs/gateways.md).
        params={"gateway": field(body, "gateway", str, default="")},
    )
    by_partition = flag(request, "include_partition_level_truncation_data")
    data = [_stop_data(request, link, o, by_partition) for o in submission.outcomes]
    return submitted(request, "KafkaAlterMirrorsDataList", submission, data)
