"""Prometheus metrics: each link's state, stream and syncers, each mirror partition's offsets
and lag (its latest reading, `lag.latest`, as every page shows it: a scrape asks no cluster),
what verification found, whether each cluster answers (`unreachable.survey`, as the overview
shows it), the requests waiting for approval and each link's last drill. `monitoring/` holds
alert rules and a dashboard on these names: a test fails when one they use is gone."""

from __future__ import annotations

import time

from django.db.models import Count
from django.utils import timezone

from replication.engine import beat, status
from replication.kafka import gateways
from replication.models import (
    ApprovalRequest,
    ClusterLink,
    DrillRun,
    Gateway,
    GroupOffsetSync,
    MergeFlow,
    MirrorTopic,
    SchemaSubjectSync,
    is_canary,
)
from replication.observe import lag, verification_sweep
from replication.overview import readiness
from replication.overview.unreachable import survey
from replication.schemas import schema_links
from replication.topics import merge_flows

_HELP = {
    "isthmus_link_state": ("gauge", "1 for the link's current state."),
    "isthmus_link_stream_running": ("gauge", "1 while the link's stream is running."),
    "isthmus_link_stream_records_per_second": ("gauge", "Records the stream copied per second."),
    "isthmus_link_stream_bytes_per_second": ("gauge", "Bytes the stream copied per second."),
    "isthmus_link_stream_failures": ("gauge", "The engine's failures in a row."),
    "isthmus_engine_running": (
        "gauge",
        "1 while the engine (the Spark application) runs; a network zone's engine's samples, "
        "this and the engine's below, carry its name (engine).",
    ),
    "isthmus_engine_resident_bytes": (
        "gauge",
        "Resident memory of the engine's processes on this machine.",
    ),
    "isthmus_engine_links": ("gauge", "Links the engine runs."),
    "isthmus_engine_spares": ("gauge", "Spare engines waiting on other hosts to take over."),
    "isthmus_zone_keeper_serving": (
        "gauge",
        "1 while a network zone's keeper (manage.py engine) answers the console's calls to the "
        "zone's clusters; by zone (engine).",
    ),
    "isthmus_beat_active": (
        "gauge",
        "1 for the host whose Celery beat holds the lease and sends the schedule "
        '(host "" and 0 while none does).',
    ),
    "isthmus_engine_slot_running": ("gauge", "1 while the copier slot's task runs."),
    "isthmus_engine_slot_records_per_second": ("gauge", "Records the slot copied per second."),
    "isthmus_engine_slot_failures": ("gauge", "The slot's failures in a row."),
    "isthmus_engine_slot_source_consumers": (
        "gauge",
        "Consumers of source clusters the slot holds (links reading one source alike share one).",
    ),
    "isthmus_engine_slot_partitions": ("gauge", "Mirror partitions of a link the slot copies."),
    "isthmus_engine_slot_queued_records": (
        "gauge",
        "Records of a link the slot has queued for the destination.",
    ),
    "isthmus_link_sync_problem": (
        "gauge",
        "1 while a syncer (consumer offsets, ACLs, auto-create, schemas) cannot do its work.",
    ),
    "isthmus_link_offset_sync_groups": (
        "gauge",
        "Consumer groups by offset sync state (IN_STEP, BEHIND_MIRROR, SKIPPED, FAILED).",
    ),
    "isthmus_link_offset_sync_age_seconds": (
        "gauge",
        "Seconds since the link's consumer offsets were last synced.",
    ),
    "isthmus_link_acl_sync_age_seconds": ("gauge", "Seconds since the link's ACLs were synced."),
    "isthmus_link_schema_sync_age_seconds": (
        "gauge",
        "Seconds since the link's last whole schema sync run.",
    ),
    "isthmus_link_schema_subjects": (
        "gauge",
        "Schema subjects the link syncs, by state (IN_STEP, CONFLICT, FAILED, PROMOTED).",
    ),
    "isthmus_mirror_partition_schema_wait_seconds": (
        "gauge",
        "Seconds the mirror partition has held at a record whose schema the destination's "
        "registry lacks.",
    ),
    "isthmus_flow_state": ("gauge", "1 for the merge flow's current state."),
    "isthmus_flow_records_copied": ("gauge", "Records the merge flow copied since it started."),
    "isthmus_flow_records_skipped": (
        "gauge",
        "Records the merge flow left out: they came from its destination cluster (the loop rule).",
    ),
    "isthmus_flow_records_per_second": ("gauge", "Records the merge flow copies per second."),
    "isthmus_flow_latency_seconds": (
        "gauge",
        "Commit time less the timestamp of the newest record the merge flow copied.",
    ),
    "isthmus_flow_partition_lag": ("gauge", "Source records the merge flow has not copied yet."),
    "isthmus_mirror_partition_lag": ("gauge", "Source records not yet in the mirror partition."),
    "isthmus_mirror_partition_lag_seconds": (
        "gauge",
        "The age of the oldest source record not yet in the mirror partition (0: it holds "
        "every record; no sample while unknown).",
    ),
    "isthmus_link_rpo_target_seconds": (
        "gauge",
        "How far behind in time the link's mirrors may fall (no sample: no target).",
    ),
    "isthmus_mirror_partition_dest_log_end_offset": ("gauge", "The mirror partition's end."),
    "isthmus_mirror_partition_source_high_watermark": ("gauge", "The source partition's end."),
    "isthmus_mirror_partition_offsets_translated": (
        "gauge",
        "1 where the mirror's offsets differ from the source's (translated), else 0.",
    ),
    "isthmus_mirror_records_lost": (
        "gauge",
        "Source records deleted (by retention) before the mirror copied them: it is not an "
        "exact copy.",
    ),
    "isthmus_mirror_differing_records": (
        "gauge",
        "Records verification found differing from the source (extra, missing, changed or at "
        "the wrong offset): it is not an exact copy.",
    ),
    "isthmus_mirror_partition_verified_offset": (
        "gauge",
        "The source offset up to which every record of the mirror partition was compared.",
    ),
    "isthmus_mirror_verified_age_seconds": (
        "gauge",
        "Seconds since the mirror was last compared with its source (every 30 s).",
    ),
    "isthmus_mirror_lag_read_age_seconds": (
        "gauge",
        "Seconds since the mirror's lag was last read from both clusters (every 10 s).",
    ),
    "isthmus_cluster_reachable": (
        "gauge",
        "1 while the cluster answers (the console's probe every 30 s, or its links' availability "
        "checks), 0 while it does not; absent until it was first probed. By its registered name, "
        "or by its cluster id for a link's source that is not registered.",
    ),
    "isthmus_drill_last_success": (
        "gauge",
        "1 if the link's last drill (a canary failed over and back) passed, 0 if it failed; "
        "absent until one has run.",
    ),
    "isthmus_drill_last_duration_seconds": ("gauge", "How long the link's last drill took."),
    "isthmus_drill_last_run_timestamp_seconds": (
        "gauge",
        "When the link's last drill finished (Unix time): an alert sees drills that stopped.",
    ),
    "isthmus_gateway_route": (
        "gauge",
        "1 for the cluster the gateway routes its clients to now (docs/gateways.md).",
    ),
    "isthmus_gateway_switches_total": ("counter", "Switches of the gateway to another cluster."),
    "isthmus_gateway_connections_total": (
        "counter",
        "Client connections the gateway's proxy accepted since it last started (a switch "
        "restarts it); absent while it does not answer.",
    ),
    "isthmus_approvals_pending": ("gauge", "Requests waiting for approval, by action."),
    "isthmus_approval_oldest_pending_seconds": (
        "gauge",
        "Seconds the oldest request still waiting for approval has waited (0: none waits).",
    ),
}


def _labels(**labels: object) -> str:
    def quoted(value: object) -> str:
        return str(value).replace("\\", "\\\\").replace('"', '\\"')

    return "{" + ",".join(f'{k}="{quoted(v)}"' for k, v in labels.items()) + "}"


def _engines(add) -> None:
    active = beat.health()
    add("isthmus_beat_active", int(active["ok"]), host=active.get("host", ""))
    for name in status.engine_names():
        # The console's own engine unlabelled, as before zones; a zone's with its name.
        _engine(add, status.engine_status(name), {"engine": name} if name else {})


def _engine(add, engine: status.EngineStatus, zone: dict[str, str]) -> None:
    add("isthmus_engine_running", int(engine.state == "RUNNING"), **zone)
    add("isthmus_engine_resident_bytes", engine.rss_bytes, **zone)
    add("isthmus_engine_links", engine.links, **zone)
    add("isthmus_engine_spares", len(engine.spares), **zone)
    if zone:
        add("isthmus_zone_keeper_serving", int(engine.keeper is not None), **zone)
    for slot in engine.slots:
        at = {**zone, "slot": slot.number}
        add("isthmus_engine_slot_running", int(slot.state == "running"), **at)
        add("isthmus_engine_slot_records_per_second", slot.records_per_sec, **at)
        add("isthmus_engine_slot_failures", slot.failures, **at)
        add("isthmus_engine_slot_source_consumers", slot.consumers, **at)
        for part in slot.links:
            ids = {**at, "link": part.link}
            add("isthmus_engine_slot_partitions", len(part.partitions), **ids)
            add("isthmus_engine_slot_queued_records", part.queued, **ids)


def prometheus_text() -> str:
    """The metrics in Prometheus' text exposition format."""
    samples: dict[str, list[str]] = {name: [] for name in _HELP}

    def add(name: str, value: float, **labels: object) -> None:
        # A whole number in full: %g would round an offset or a timestamp to 6 digits.
        shown = str(int(value)) if isinstance(value, int) else f"{value:g}"
        samples[name].append(f"{name}{_labels(**labels)} {shown}")

    for link in ClusterLink.objects.select_related("destination"):
        ids = {"link": link.name, "destination": link.destination.name}
        add("isthmus_link_state", 1, **ids, state=link.state)
        stream = status.status(link)
        add("isthmus_link_stream_running", int(stream.state == "RUNNING"), **ids)
        add("isthmus_link_stream_records_per_second", stream.records_per_sec, **ids)
        add("isthmus_link_stream_bytes_per_second", stream.bytes_per_sec, **ids)
        add("isthmus_link_stream_failures", stream.failures, **ids)
        if link.rpo_target_seconds is not None:
            add("isthmus_link_rpo_target_seconds", link.rpo_target_seconds, **ids)
        for syncer in link.sync_problems:
            add("isthmus_link_sync_problem", 1, **ids, syncer=syncer)
        if schema_links.enabled(link):
            _schema_waits(add, link, ids)
        now = timezone.now()
        for name, at in (
            ("isthmus_link_offset_sync_age_seconds", link.offsets_synced_at),
            ("isthmus_link_acl_sync_age_seconds", link.acls_synced_at),
            ("isthmus_link_schema_sync_age_seconds", link.schemas_synced_at),
        ):
            if at is not None:
                add(name, round((now - at).total_seconds(), 1), **ids)
    _engines(add)
    _by_state(add, "isthmus_link_offset_sync_groups", GroupOffsetSync)
    _by_state(add, "isthmus_link_schema_subjects", SchemaSubjectSync)
    _mirror_lags(add)
    _flows(add)
    _clusters(add)
    _approvals(add)
    _drills(add)
    _gateways(add)
    lines = []
    for name, (kind, text) in _HELP.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"


def _flows(add) -> None:
    """Each merge flow's state and what the engine last said of it (a heartbeat read per link)."""
    statuses: dict[int, dict[str, merge_flows.FlowStatus]] = {}
    for flow in MergeFlow.objects.select_related("link", "destination"):
        ids = {"flow": flow.name, "link": flow.link.name, "destination": flow.destination.name}
        add("isthmus_flow_state", 1, **ids, state=flow.state)
        if flow.link_id not in statuses:
            statuses[flow.link_id] = merge_flows.statuses(flow.link)
        found = statuses[flow.link_id][flow.name]
        add("isthmus_flow_records_copied", found.records, **ids)
        add("isthmus_flow_records_skipped", found.skipped, **ids)
        add("isthmus_flow_records_per_second", found.records_per_sec, **ids)
        if found.latency_ms >= 0:
            add("isthmus_flow_latency_seconds", found.latency_ms / 1000, **ids)
        for partition, reading in found.partitions.items():
            add("isthmus_flow_partition_lag", reading["lag"], **ids, partition=partition)


def _by_state(add, name: str, model) -> None:
    """A link's rows of `model` (per group, per subject) counted by state."""
    rows = model.objects.values("link__name", "link__destination__name", "state")
    for row in rows.annotate(n=Count("id")).order_by():
        add(
            name,
            row["n"],
            link=row["link__name"],
            destination=row["link__destination__name"],
            state=row["state"],
        )


def _schema_waits(add, link: ClusterLink, ids: dict) -> None:
    """Each mirror partition of the link held for a schema (what the engine last said)."""
    now_ms = time.time() * 1000
    for mirror, partitions in status.progress(link).partitions.items():
        for partition, reading in partitions.items():
            if wait := reading.get("schema_wait"):
                seconds = round(max(0, now_ms - wait["since_ms"]) / 1000, 1)
                add(
                    "isthmus_mirror_partition_schema_wait_seconds",
                    seconds,
                    **ids,
                    mirror=mirror,
                    partition=partition,
                )


def _mirror_lags(add) -> None:
    """Each mirror partition's latest lag reading, and how old it is."""
    now = time.time()
    readings: dict[int, dict[str, lag.Reading]] = {}
    mirrors = MirrorTopic.objects.exclude(state=MirrorTopic.State.STOPPED).select_related(
        "link", "destination"
    )
    for mirror in mirrors.order_by("link__name", "mirror_topic"):
        if is_canary(mirror.link, mirror.mirror_topic):
            continue  # a drill's own topic, made to lag and be failed over: no RPO of anyone's
        ids = {
            "link": mirror.link.name,
            "destination": mirror.destination.name,
            "mirror": mirror.mirror_topic,
        }
        lost = sum(end - first for first, end in (mirror.records_lost or {}).values())
        add("isthmus_mirror_records_lost", lost, **ids)
        add("isthmus_mirror_differing_records", mirror.differing_records, **ids)
        if mirror.verification:
            add(
                "isthmus_mirror_verified_age_seconds", round(now - mirror.verification["at"]), **ids
            )
        for partition, (_, upto) in verification_sweep.verified(mirror).items():
            add("isthmus_mirror_partition_verified_offset", upto, **ids, partition=partition)
        if mirror.link_id not in readings:
            readings[mirror.link_id] = lag.latest(mirror.link)
        reading = readings[mirror.link_id].get(mirror.mirror_topic)
        if reading is None:
            continue  # not read yet
        add("isthmus_mirror_lag_read_age_seconds", round(now - reading.at, 1), **ids)
        for partition, p in reading.partitions.items():
            behind, source_end, mirror_end, translated = p[:4]
            at = {**ids, "partition": partition}
            add("isthmus_mirror_partition_lag", behind, **at)
            if p.lag_ms >= 0:
                add("isthmus_mirror_partition_lag_seconds", p.lag_ms / 1000, **at)
            add("isthmus_mirror_partition_dest_log_end_offset", mirror_end, **at)
            add("isthmus_mirror_partition_source_high_watermark", source_end, **at)
            add("isthmus_mirror_partition_offsets_translated", int(translated), **at)


def _clusters(add) -> None:
    """Whether each cluster the console knows answers, as the overview says (no cluster asked)."""
    links = list(ClusterLink.objects.select_related("destination"))
    for cluster in survey(links).clusters:
        if cluster.reachable is not None:
            add("isthmus_cluster_reachable", int(cluster.reachable), cluster=cluster.name)


def _gateways(add) -> None:
    for gateway in Gateway.objects.select_related("route"):
        add("isthmus_gateway_route", 1, gateway=gateway.name, cluster=gateway.route.name)
        add("isthmus_gateway_switches_total", gateway.switches, gateway=gateway.name)
        accepted = gateways.connections(gateway)
        if accepted is not None:
            add("isthmus_gateway_connections_total", int(accepted), gateway=gateway.name)


def _approvals(add) -> None:
    """Requests waiting for approval by action (every action, 0 included: a series that comes
    and goes breaks alerts on it), and how long the oldest has waited."""
    pending = ApprovalRequest.objects.filter(state=ApprovalRequest.State.PENDING)
    counts = dict(pending.values("action").annotate(n=Count("pk")).values_list("action", "n"))
    for action in ApprovalRequest.Action.values:
        add("isthmus_approvals_pending", counts.get(action, 0), action=action)
    oldest = pending.order_by("created_at").values_list("created_at", flat=True).first()
    waited = (timezone.now() - oldest).total_seconds() if oldest is not None else 0
    add("isthmus_approval_oldest_pending_seconds", round(max(0.0, waited), 1))


def _drills(add) -> None:
    """Each link's last drill that passed or failed (a refused one is no drill)."""
    last = readiness.last_drills().select_related("link__destination")
    for run in sorted(last, key=lambda r: r.link.name):
        ids = {"link": run.link.name, "destination": run.link.destination.name}
        assert run.finished_at is not None  # (finished: passed or failed)
        add("isthmus_drill_last_success", int(run.outcome == DrillRun.Outcome.PASSED), **ids)
        add("isthmus_drill_last_duration_seconds", run.seconds or 0, **ids)
        add("isthmus_drill_last_run_timestamp_seconds", round(run.finished_at.timestamp()), **ids)
