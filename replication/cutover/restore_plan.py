"""Truncate-and-restore's plan, its dry run: per topic of the old primary, whether it can be
restored (the source of a mirror the link's other half failed over or promoted, the same
partitions on both sides, on a link without a prefix), and per partition the offset it would be
truncated to, how many records that would set aside and how many are still to copy across. The
restore itself, its stored steps and their finish, is `restore`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core.errors import ReplicationError
from replication.cutover.promote import TopicOutcome
from replication.kafka import translations
from replication.kafka.connections import cluster_admin
from replication.models import ClusterLink, MirrorTopic
from replication.topics import links
from spark_jobs import translation

State = MirrorTopic.State


@dataclass
class RestoreOutcome(TopicOutcome):
    """A topic's truncate-and-restore, in Confluent's words: per partition the offset it was
    truncated to and how many records that set aside (into `quarantine`)."""

    partitions: list[dict] = field(default_factory=list)
    quarantine: str = ""
    bytes_copied_within_cluster: int = 0  # once restored: set aside and put back, locally

    @property
    def messages_truncated(self) -> int:
        return sum(p["messages_truncated"] for p in self.partitions)


def check(link: ClusterLink, names: list[str]) -> list[RestoreOutcome]:
    """The dry run: per topic, what would be truncated and set aside, partition by partition."""
    peer = links.peer_of(link)
    if link.config("cluster.link.prefix"):
        raise ReplicationError(
            f"Cluster link {link.name!r} names its mirrors with a prefix; truncate-and-restore "
            "needs a link without one. Nothing was changed."
        )
    admin = cluster_admin(link.destination)
    return [_plan(link, peer, admin, name) for name in names]


def _plan(link: ClusterLink, peer: ClusterLink, admin: KafkaAdmin, name: str) -> RestoreOutcome:
    outcome = RestoreOutcome(name)
    failed_over = peer.mirrors.filter(mirror_topic=name, source_topic=name).first()
    if failed_over is None or failed_over.state != State.STOPPED:
        outcome.error, outcome.status = (
            f"Topic {name!r} on {link.destination.name} is not the source of a mirror that "
            f"link {peer.name!r} failed over or promoted: truncate-and-restore is the way back "
            "after a failover.",
            404 if failed_over is None else 409,
        )
        return outcome
    outcome.error = standing_refusal(link.mirrors.filter(mirror_topic=name).first(), failed_over)
    if outcome.error:
        outcome.status = 409
        return outcome
    try:
        partitions = admin.describe_topic(name).partitions
        starts = admin.start_offsets(name, partitions)
        ends = admin.end_offsets(name, partitions)
    except KafkaAdminError as exc:
        outcome.error, outcome.status = f"Topic {name!r} cannot be read: {exc}", 503
        return outcome
    try:
        promoted = cluster_admin(peer.destination).end_offsets(name, partitions)
    except KafkaAdminError as exc:
        outcome.error, outcome.status = (
            f"The promoted topic {name!r} on {peer.destination.name} cannot be read: {exc}",
            503,
        )
        return outcome
    stopped = {int(p): o for p, o in (failed_over.stop_offsets or {}).items()}
    outcome.error = _refusal(name, partitions, stopped)
    outcome.status = 409 if outcome.error else 200
    if outcome.error:
        return outcome
    try:
        shared = shared_offsets(translations.of_topic(peer.destination, name), stopped)
    except (KafkaAdminError, ReplicationError) as exc:  # each says what it could not read
        outcome.error, outcome.status = str(exc), 503
        return outcome
    for p in range(partitions):
        first, point = shared[p]
        point = min(point, ends[p])
        never = max(min(first, ends[p]) - starts[p], 0)  # older than the mirror's first record
        outcome.partitions.append(
            {
                "partition_id": p,
                "offset_truncated_to": point,
                "messages_truncated": ends[p] - point + never,
                "records_to_copy": max(promoted.get(p, 0) - stopped[p], 0),
            }
        )
    outcome.state = State.STOPPED
    return outcome


def standing_refusal(old: MirrorTopic | None, failed_over: MirrorTopic) -> str:
    """Why the old primary's topic cannot be made a mirror of `failed_over`'s topic now, given
    its own mirror row on that cluster (`old`, None if it has none); "" if it can. A STOPPED
    row older than the failover is only history (a reverse left it): the restore replaces it."""
    if old is None or (old.state == State.STOPPED and old.state_time <= failed_over.state_time):
        return ""
    name, here, there = old.mirror_topic, old.destination.name, failed_over.destination.name
    if old.state in (State.PENDING_SETUP_FOR_RESTORE, State.PENDING_RESTORE):
        return f"Topic {name!r} on {here} is being failed back already (a restore is under way)."
    if old.state != State.STOPPED:
        return (
            f"Topic {name!r} on {here} already mirrors {name!r} on {there} over link "
            f"{old.link.name!r} ({old.state}): {there} is the primary and there is nothing to "
            "fail back. To make it the primary again, reverse that mirror (or fail it over)."
        )
    return (
        f"Topic {name!r} on {here} became writable after {name!r} on {there} did (its "
        f"{(old.stop_report or {}).get('kind', 'stop')} at "
        f"{old.state_time:%Y-%m-%d %H:%M:%S} UTC): it is the newer primary. To make {name!r} on "
        f"{there} its mirror again, fail back {name!r} on {here} (link {old.link.name!r})."
    )


def shared_offsets(
    runs: dict[int, translation.Runs], stopped: dict[int, int]
) -> dict[int, tuple[int, int]]:
    """Per partition, the old primary's offsets [first, point) of the records the promoted
    topic got from it: its first copied record, and the first it did not copy."""
    shared = {}
    for p, end in stopped.items():
        r = runs.get(p, translation.Runs())
        shared[p] = (r.upto(0).next_source(0), r.upto(end).next_source(end))
    return shared


def _refusal(name: str, partitions: int, stopped: dict) -> str:
    if len(stopped) != partitions:
        return (
            f"Topic {name!r} has {partitions} partitions, its failed-over mirror {len(stopped)}: "
            "the partitions must be the same on both sides."
        )
    return ""
