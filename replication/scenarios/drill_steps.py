"""A drill's steps on a canary topic of its own (`canary_topic`: `isthmus-drill.` and the start
of the link's id), each doing one thing through the domain's functions and checking it on the
clusters with real clients, as the scenarios' steps do. `drill_topics.py` keeps what they make
and removes it after; `drills.py` runs them and keeps what they saw."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from replication.cutover import promote, restore, reverse
from replication.governance import audit
from replication.kafka.connections import cluster_admin
from replication.models import ClusterLink, KafkaCluster, MadeTopic, MirrorTopic
from replication.scenarios import clients
from replication.scenarios.runner import StepFailed, wait_for
from replication.topics import links, mirrors

RECORDS, PARTITIONS = 20, 2
CATCH_UP_S = 120  # how long the canary's mirror may take to copy its records
RESTORE, DELETE = "restore", "delete"  # the ways back


@dataclass
class Drill:
    """What a drill's steps share: who runs it, the link and its clusters, the canary."""

    actor: audit.Actor
    link: ClusterLink
    source: KafkaCluster  # the link's source, as registered (the console's own connection)
    canary: str  # its name on the source
    run_pk: int
    made: list[MadeTopic] = field(default_factory=list)  # what it made and has not removed

    @property
    def mirror_topic(self) -> str:
        return self.link.prefix + self.canary

    @cached_property
    def peer(self) -> ClusterLink | None:
        """The link's other half (read once: every step asks)."""
        return links.other_half(self.link)

    @property
    def way_back(self) -> str:
        """Truncate-and-restore, then reverse, on a bidirectional link whose mirrors keep
        their names (its other half mirrors the promoted canary back); otherwise the promoted
        canary and its source are deleted."""
        return RESTORE if self.peer is not None and not self.link.prefix else DELETE


@dataclass(frozen=True)
class DrillStepSpec:
    name: str
    run: Callable[[Drill], str]  # does it and checks it; returns what it saw, or StepFailed
    timing: str = ""  # "failover" or "failback": the drill's two times add these up


def create_canary(d: Drill) -> str:
    admin = cluster_admin(d.source)
    admin.create_topic(d.canary, PARTITIONS, None, {})
    wait_for(
        lambda: clients.quietly(lambda: admin.describe_topic(d.canary)),
        15,
        f"topic {d.canary} on {d.source.name}",
        lambda: "no such topic",
    )
    return f"topic {d.canary} on {d.source.name}, {PARTITIONS} partitions"


def write_records(d: Drill) -> str:
    values = [f"drill {d.run_pk} record {i}".encode() for i in range(RECORDS)]
    reports = clients.produce(d.source.connection_config(), d.canary, values, PARTITIONS)
    errors = [str(e) for e, _, _ in reports if e is not None]
    if errors or len(reports) != RECORDS:
        raise StepFailed(f"{RECORDS} records written", errors[0] if errors else len(reports))
    return f"{RECORDS} records written over {PARTITIONS} partitions"


def mirror_canary(d: Drill) -> str:
    made = mirrors.create_mirror(d.actor, d.link, d.canary, canary=True)
    return f"mirror {made.mirror_topic} on {d.link.destination.name}, {made.state}"


def _ends(d: Drill) -> tuple[dict, dict]:
    return (
        cluster_admin(d.source).end_offsets(d.canary, PARTITIONS),
        cluster_admin(d.link.destination).end_offsets(d.mirror_topic, PARTITIONS),
    )


def caught_up(d: Drill) -> str:
    wait_for(
        lambda: (e := _ends(d))[0] == e[1],
        CATCH_UP_S,
        "the mirror's ends equal the source's",
        lambda: "source ends {}, mirror ends {}".format(*_ends(d)),
    )
    return f"caught up: ends {_ends(d)[1]} on both"


def fail_over(d: Drill) -> str:
    [outcome] = promote.stop_mirrors(
        d.actor, d.link, [d.mirror_topic], promote.FAILOVER, wait=True, note=f"drill {d.run_pk}"
    )
    if outcome.error:
        raise StepFailed("the failover to finish", outcome.error)
    mirror = d.link.mirrors.get(mirror_topic=d.mirror_topic)
    if mirror.state != MirrorTopic.State.STOPPED:
        raise StepFailed("STOPPED", mirror.state)
    return f"failed over: {d.mirror_topic} STOPPED at {mirror.stop_offsets}"


def _read(cluster: KafkaCluster, topic: str) -> list[tuple]:
    return [r[:3] for r in clients.read_partitions(cluster.connection_config(), topic, PARTITIONS)]


def promoted_exact(d: Drill) -> str:
    """The promoted canary holds every record at its partition and offset, and takes a write."""
    source, promoted = _read(d.source, d.canary), _read(d.link.destination, d.mirror_topic)
    if promoted != source or len(source) != RECORDS:
        extra = sorted(set(promoted) - set(source))[:3]
        missing = sorted(set(source) - set(promoted))[:3]
        raise StepFailed(
            f"the {RECORDS} records of the source at the same partitions and offsets",
            f"{len(promoted)} records; missing {missing or 'none'}, extra {extra or 'none'}",
        )
    [(error, partition, offset)] = clients.produce(
        d.link.destination.connection_config(), d.mirror_topic, [b"written after the failover"]
    )
    if error is not None:
        raise StepFailed(f"{d.mirror_topic} writable on {d.link.destination.name}", error)
    return (
        f"holds the {RECORDS} records exactly; took a write at partition {partition} offset "
        f"{offset}"
    )


def restore_source(d: Drill) -> str:
    peer = d.peer
    assert peer is not None  # (the restore way back is taken only with one)
    [outcome] = restore.truncate_and_restore(
        d.actor, peer, [d.canary], wait=True, note=f"drill {d.run_pk}"
    )
    if outcome.error:
        raise StepFailed("the truncate-and-restore to finish", outcome.error)
    wait_for(
        lambda: _read(d.source, d.canary) == _read(d.link.destination, d.mirror_topic),
        CATCH_UP_S,
        "the same records on both clusters",
        lambda: f"{len(_read(d.source, d.canary))} on the source",
    )
    return f"{d.canary} on {d.source.name} restored: it mirrors the promoted canary"


def reverse_back(d: Drill) -> str:
    peer = d.peer
    assert peer is not None
    [outcome] = reverse.reverse_mirrors(
        d.actor, peer, [d.canary], reverse.START, wait=True, note=f"drill {d.run_pk}"
    )
    if outcome.error:
        raise StepFailed("the reverse to finish", outcome.error)
    return f"{d.canary} on {d.source.name} takes the writes again; the destination mirrors it"


def delete_promoted(d: Drill) -> str:
    mirror = d.link.mirrors.get(mirror_topic=d.mirror_topic)
    mirrors.delete_mirror(d.actor, mirror)
    cluster_admin(d.source).delete_topic(d.canary)
    return f"deleted the promoted {d.mirror_topic} and its source {d.canary}"


STEPS = [
    DrillStepSpec("Create the canary on the source", create_canary),
    DrillStepSpec("Write records to it", write_records),
    DrillStepSpec("Mirror it over the link", mirror_canary),
    DrillStepSpec("Wait until the mirror is caught up", caught_up),
    DrillStepSpec("Fail the mirror over", fail_over, "failover"),
    DrillStepSpec("Check the promoted canary: every record, and writable", promoted_exact),
]
WAYS_BACK = {
    RESTORE: [
        DrillStepSpec("Truncate and restore the source canary", restore_source, "failback"),
        DrillStepSpec("Reverse back", reverse_back, "failback"),
    ],
    DELETE: [
        DrillStepSpec("Delete the promoted canary and its source", delete_promoted, "failback")
    ],
}
