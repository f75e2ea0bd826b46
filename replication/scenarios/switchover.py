"""`client-switchover`: an application follows a failover through a gateway (docs/gateways.md),
with no change to its configuration and no restart. A producer and a consumer group connect to
a gateway in front of the source; the link mirrors their topic and syncs the group's offsets;
the failover names the gateway, which pauses them and routes them to the destination once the
mirror is writable there; the same processes carry on there. Each step says how the
application's records flowed: before, during and after."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from django.conf import settings

from infra import processes
from replication.actions import gateway_moves
from replication.actions.asked import Asked
from replication.actions.operations import Ran
from replication.core.errors import ReplicationError
from replication.cutover import promote
from replication.kafka import gateways
from replication.kafka.connections import cluster_admin
from replication.models import ApprovalRequest, Gateway, GatewayMove
from replication.scenarios import app_clients, clients
from replication.scenarios.moves import group_filters
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.scenarios.share_data import ON_DESTINATION, ON_SOURCE, cleanup, create_link_with
from replication.topics import mirrors

PARTITIONS, RATE = 2, 20  # records a second
BEFORE, AFTER = 60, 60  # records read before the failover, and after it


def _names(tag: str) -> dict[str, str]:
    return {
        "topic": f"{tag}-payments",
        "link": f"{tag}-link",
        "group": f"{tag}-app",
        "gateway": f"{tag}-gateway",
        "folder": tag,
    }


def _folder(c: Context) -> Path:
    return Path(settings.VAR_DIR) / "scenarios" / c.names["folder"]


def _out(c: Context, client: str) -> Path:
    return _folder(c) / f"{client}.jsonl"


def _pidfile(c: Context, client: str) -> Path:
    return _folder(c) / f"{client}.pid"


def create_topic(c: Context) -> str:
    clients.create_topic(c.source, c.names["topic"], PARTITIONS)
    return f"topic {c.names['topic']} on {c.source.name}, {PARTITIONS} partitions"


def link_and_mirror(c: Context) -> str:
    made = create_link_with(
        c,
        {
            "consumer.offset.sync.enable": "true",
            "consumer.offset.sync.ms": "1000",
            "consumer.offset.group.filters": group_filters((c.names["group"], "INCLUDE")),
        },
    )
    mirror = mirrors.create_mirror(c.actor, c.link, c.names["topic"])
    return f"{made}; mirror {mirror.mirror_topic}, syncing {c.names['group']}'s offsets"


def define_gateway(c: Context) -> str:
    gateway = gateways.define(
        c.actor,
        c.names["gateway"],
        gateways.free_address(),
        [c.source, c.destination],
        c.source,
    )
    return f"gateway {gateway.name} answers at {gateway.address} and routes to {c.source.name}"


def start_application(c: Context) -> str:
    address = Gateway.objects.get(name=c.names["gateway"]).address
    topic, group = c.names["topic"], c.names["group"]
    for client, args in (
        ("producer", ["produce", address, topic, str(RATE)]),
        ("consumer", ["consume", address, topic, group]),
    ):
        command = [sys.executable, "-m", "replication.scenarios.app_clients", *args]
        processes.start(
            [*command, str(_out(c, client))],
            pidfile=_pidfile(c, client),
            logfile=_folder(c) / f"{client}.log",
            env=dict(os.environ),
            cwd=Path(settings.BASE_DIR),
        )
    wait_for(
        lambda: len(app_clients.read(_out(c, "consumer"))) >= BEFORE,
        120,
        f"the consumer reading {BEFORE} records through the gateway",
        lambda: f"{len(app_clients.read(_out(c, 'consumer')))} read",
    )
    return (
        f"the producer writes {RATE} records/s and the consumer group {group} reads them, both "
        f"at {address} only: {_flow(c)}"
    )


def _flow(c: Context, since: float = 0.0) -> str:
    acked = [e for e in app_clients.read(_out(c, "producer")) if e["at"] >= since]
    read = [e for e in app_clients.read(_out(c, "consumer")) if e["at"] >= since]
    failed = [e for e in acked if "error" in e]
    words = f"{len(acked) - len(failed)} records acknowledged, {len(read)} read"
    return words + (f", {len(failed)} sends failed" if failed else "")


def offsets_synced(c: Context) -> str:
    """Wait until the mirror copied what the group read and its offsets are on the destination
    (the offset sync holds a group's offsets back to what the mirror has)."""
    group, topic = c.names["group"], c.names["topic"]
    destination = cluster_admin(c.destination)

    def synced() -> dict:
        held = destination.group_offsets([group]).get(group, {})
        return {p: o for (t, p), o in held.items() if t == topic}

    found = wait_for(
        lambda: sum((s := synced()).values()) >= BEFORE // 2 and s,
        180,
        f"{group}'s offsets on the destination, past {BEFORE // 2} records",
        lambda: str(synced() or "none"),
    )
    shown = ", ".join(f"partition {p}: {o}" for p, o in sorted(found.items()))
    return f"the mirror copies; {group}'s offsets synced to {c.destination.name}: {shown}"


def fail_over_with_gateway(c: Context) -> str:
    topic = c.names["topic"]
    asked = Asked(c.link, ApprovalRequest.Action.FAILOVER, [topic], {"gateway": c.names["gateway"]})
    try:
        gateway_moves.check(c.actor, asked)
    except ReplicationError as exc:
        raise StepFailed("the gateway to be movable by whoever runs this", str(exc)) from exc
    ran = gateway_moves.cut_over(
        c.actor,
        asked,
        lambda: Ran(
            promote.stop_mirrors(
                c.actor, c.link, [topic], promote.FAILOVER, wait=True, note="client-switchover"
            )
        ),
    )
    if ran.outcomes[0].error:
        raise StepFailed("the failover to finish", ran.outcomes[0].error)
    gateway_moves.finish(c.link)
    move = GatewayMove.objects.filter(link=c.link).latest("pk")
    if move.state != GatewayMove.State.SWITCHED:
        raise StepFailed(f"gateway {c.names['gateway']} switched", move.message)
    c.kept["switched"] = move.done_at.timestamp() if move.done_at else time.time()
    return f"the mirror is STOPPED and writable on {c.destination.name}; {move.message}"


def carry_on(c: Context) -> str:
    switched = c.kept["switched"]

    def after() -> int:
        return len([e for e in app_clients.read(_out(c, "consumer")) if e["at"] > switched])

    wait_for(
        lambda: after() >= AFTER,
        120,
        f"the consumer reading {AFTER} records after the switch",
        lambda: f"{after()} read",
    )
    pids = [processes.read_pidfile(_pidfile(c, client)) for client in ("producer", "consumer")]
    if None in pids:
        raise StepFailed("the same producer and consumer processes running", "one stopped")
    times = sorted(e["at"] for e in app_clients.read(_out(c, "producer")) if "error" not in e)
    pause = max(b - a for a, b in zip(times, times[1:], strict=False))
    return (
        f"on {c.destination.name}, the same processes: {_flow(c, switched)}; the producer's "
        f"longest wait for an acknowledgement was {pause:.1f} s, the failover's pause"
    )


def check_every_record(c: Context) -> str:
    # The producer first: the consumer then reads up to its last record before it stops.
    processes.stop(_pidfile(c, "producer"), timeout=60, sig=signal.SIGTERM)
    topic = c.names["topic"]
    on = {
        cluster.name: {
            (p, o): v.decode()
            for p, o, v, _ in clients.read_partitions(clients.ordinary(cluster), topic, PARTITIONS)
        }
        for cluster in (c.source, c.destination)
    }
    acked = app_clients.read(_out(c, "producer"))
    failed = [e for e in acked if "error" in e]
    if failed:
        raise StepFailed("no send failed", failed[0]["error"])
    lost = [
        e
        for e in acked
        if e["value"]
        not in (
            on[c.source.name].get((e["partition"], e["offset"])),
            on[c.destination.name].get((e["partition"], e["offset"])),
        )
    ]
    if lost:
        raise StepFailed("every acknowledged record where it was acknowledged", f"{len(lost)} not")

    def unread() -> set:
        read = {(e["partition"], e["offset"]) for e in app_clients.read(_out(c, "consumer"))}
        return set(on[c.destination.name]) - read

    wait_for(
        lambda: not unread(),
        60,
        f"the consumer reading every record {c.destination.name} holds",
        lambda: f"{len(unread())} unread",
    )
    _stop_application(c)
    return (
        f"{len(acked)} records acknowledged, each at its offset on {c.source.name} (before the "
        f"switch) or {c.destination.name} (after it); the consumer read all "
        f"{len(on[c.destination.name])} records {c.destination.name} holds"
    )


def _stop_application(c: Context) -> None:
    for client in ("producer", "consumer"):
        processes.stop(_pidfile(c, client), timeout=60, sig=signal.SIGTERM)


def switchover_cleanup(c: Context) -> list[str]:
    left = []
    _stop_application(c)
    gateway = Gateway.objects.filter(name=c.names["gateway"]).first()
    if gateway is not None:
        try:
            gateways.delete(c.actor, gateway)
        except ReplicationError as exc:
            left.append(f"gateway {gateway.name}: {exc}")
    shutil.rmtree(_folder(c), ignore_errors=True)
    # The consumer's member on the source, cut off by the switch, leaves the group there only
    # when its session times out (app_clients.SESSION_MS): the group is deleted once it has.
    admin = cluster_admin(c.source)

    def group_deleted() -> bool:
        admin.delete_groups([c.names["group"]])
        return True

    processes.wait_for(lambda: clients.quietly(group_deleted), app_clients.SESSION_MS / 1000 + 10)
    return left + cleanup(c)


CLIENT_SWITCHOVER = Scenario(
    name="client-switchover",
    title="Move an application with a failover (gateway)",
    summary="A producer and a consumer group through a gateway follow a failover to the "
    "destination: no restart, no new setting, every record where it was acknowledged.",
    names=_names,
    cleanup=switchover_cleanup,
    steps=[
        Step(
            "Create the application's topic",
            "A topic of 2 partitions on the source.",
            "kafka-topics --create --topic {topic} --partitions 2 " + ON_SOURCE,
            "the topic",
            create_topic,
        ),
        Step(
            "Link and mirror it, syncing the application's offsets",
            "The link syncs the group's offsets every second; the mirror copies the topic.",
            "kafka-mirrors --create --mirror-topic {topic} --link {link} " + ON_DESTINATION,
            "the mirror",
            link_and_mirror,
        ),
        Step(
            "Put a gateway in front of the source",
            "A Kafka proxy (Kroxylicious) the application connects to instead of a cluster.",
            "isthmus-gateways --create --gateway {gateway} --clusters source,destination "
            "--route source",
            "the gateway answering for the source",
            define_gateway,
        ),
        Step(
            "Start the application through the gateway",
            "A producer and a consumer group, each a process of its own, told only the "
            "gateway's address.",
            "kafka-console-producer --topic {topic} --bootstrap-server <the gateway>",
            f"the consumer reading {BEFORE} records",
            start_application,
        ),
        Step(
            "Wait for the group's offsets on the destination",
            "The link copies the group's committed offsets to the mirror's cluster.",
            "kafka-consumer-groups --describe --group {group} " + ON_DESTINATION,
            "the offsets there",
            offsets_synced,
        ),
        Step(
            "Fail over, moving the application",
            "The failover names the gateway: its clients pause, the mirror stops and is "
            "writable, and the gateway routes them to the destination.",
            "kafka-mirrors --failover --topics {topic} --gateway {gateway} " + ON_DESTINATION,
            "the gateway switched",
            fail_over_with_gateway,
        ),
        Step(
            "Watch the application carry on",
            "The same processes write and read on the destination now.",
            "kafka-console-consumer --topic {topic} --group {group} --bootstrap-server "
            "<the gateway>",
            f"the consumer reading {AFTER} records after the switch",
            carry_on,
        ),
        Step(
            "Stop it and check every record",
            "Each acknowledged record is where it was acknowledged; the consumer read all the "
            "destination holds.",
            "kafka-console-consumer --topic {topic} --from-beginning " + ON_DESTINATION,
            "every record accounted for",
            check_every_record,
        ),
    ],
)
