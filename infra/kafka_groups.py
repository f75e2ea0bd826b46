"""Consumer groups through the Kafka admin adapter: a group as its coordinator describes it
(`GroupDetail` with its members, `GroupInfo` in short) and its committed offsets
(`GroupOffsets`), and `GroupCalls`, `KafkaAdmin`'s calls that list and describe groups, read and
commit their offsets (refused, in words, while a group has active members) and delete them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from .kafka_errors import AdminRequests, KafkaAdminError


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]]  # (topic, partition)


@dataclass(frozen=True)
class GroupDetail:
    """A consumer group as its coordinator describes it, with its members."""

    group_id: str
    is_simple: bool
    state: str
    partition_assignor: str
    coordinator: int | None
    members: list[GroupMember]


@dataclass(frozen=True)
class GroupInfo:
    """A consumer group as the coordinator describes it."""

    group_id: str
    state: str  # Empty, Stable, PreparingRebalance, CompletingRebalance, Dead, Unknown
    members: int


GroupOffsets = dict[tuple[str, int], int]  # (topic, partition) -> committed offset

# Kafka's names of the group states (librdkafka's enum names them in its own way).
_GROUP_STATES = {
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.DEAD: "Dead",
}


# How Kafka refuses offsets for a group whose consumers are running.
_GROUP_IN_USE = (
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.ILLEGAL_GENERATION,
)
_IN_USE = "it has active members on the destination"
# A group coordinator still settling (a broker just started): worth asking again.
COORDINATOR_LOADING = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)


class GroupCalls(AdminRequests):
    """`KafkaAdmin`'s calls on consumer groups. Those sent to a group's coordinator have no
    timeout of librdkafka's (admin_client.COORDINATOR_REQUEST_S): `_wait` gives up at
    `timeout`, as for every other request."""

    def group_details(self, group_ids: Iterable[str]) -> dict[str, GroupDetail]:
        """Each group with its members and their assignments, all in one call."""
        ids = sorted(set(group_ids))
        if not ids:
            return {}
        futures = self._client.describe_consumer_groups(ids)
        found = {}
        for group_id, future in futures.items():
            d = self._wait(future, f"describe consumer group {group_id!r}")
            found[group_id] = GroupDetail(
                group_id,
                d.is_simple_consumer_group,
                _GROUP_STATES.get(d.state, "Unknown"),
                d.partition_assignor or "",
                d.coordinator.id if d.coordinator else None,
                [
                    GroupMember(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.host,
                        [(tp.topic, tp.partition) for tp in m.assignment.topic_partitions or []],
                    )
                    for m in d.members
                ],
            )
        return found

    def list_group_ids(self) -> set[str]:
        """The ids of every consumer group the cluster knows, in one request per broker."""
        future = self._client.list_consumer_groups(request_timeout=self.timeout)
        result = self._wait(future, "list the consumer groups")
        if result.errors:  # a broker that did not answer: say it as any other failure
            error = result.errors[0]
            raise self._fail(
                "list the consumer groups",
                error if isinstance(error, KafkaException) else KafkaException(error),
            )
        return {g.group_id for g in result.valid}

    def group_offsets(self, group_ids: Iterable[str]) -> dict[str, GroupOffsets]:
        """Each group's committed offsets. Kafka's client takes one group per request, so the
        requests all go out at once and are answered together."""
        futures = {}
        for group_id in sorted(set(group_ids)):
            futures.update(
                self._client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group_id)])
            )
        found = {}
        for group_id, future in futures.items():
            result = self._wait(future, f"read the offsets of consumer group {group_id!r}")
            found[group_id] = {
                (tp.topic, tp.partition): tp.offset
                for tp in result.topic_partitions or []
                if tp.offset >= 0 and tp.error is None
            }
        return found

    def alter_group_offsets(self, offsets: dict[str, GroupOffsets]) -> dict[str, str | None]:
        """Commit offsets for groups with no active members, all requests at once; for each
        group None, or why it was refused (Kafka refuses a group with active members)."""
        futures = {}
        for group_id, committed in sorted(offsets.items()):
            request = ConsumerGroupTopicPartitions(
                group_id, [TopicPartition(t, p, o) for (t, p), o in sorted(committed.items())]
            )
            futures.update(self._client.alter_consumer_group_offsets([request]))
        outcome: dict[str, str | None] = {}
        for group_id, future in futures.items():
            try:
                result = future.result(timeout=self.timeout + 1)
            except (KafkaException, TimeoutError) as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if error is None or error.code() not in _GROUP_IN_USE:
                    raise self._fail(f"commit offsets for group {group_id!r}", exc) from exc
                outcome[group_id] = _IN_USE
                continue
            failed = [tp for tp in result.topic_partitions or [] if tp.error is not None]
            if not failed:
                outcome[group_id] = None
            elif failed[0].error.code() in _GROUP_IN_USE:
                outcome[group_id] = _IN_USE
            else:
                tp = failed[0]
                outcome[group_id] = f"{tp.topic} partition {tp.partition}: {tp.error.str()}"
        return outcome

    def delete_groups(self, group_ids: list[str], attempts: int = 10) -> None:
        """Delete consumer groups (empty ones); a group that is not there is no error. A
        coordinator still loading (a broker just started) is asked again, a second apart."""
        pending = list(group_ids)
        for attempt in range(attempts):
            futures = self._client.delete_consumer_groups(pending)
            pending = []
            for group_id, future in futures.items():
                try:
                    self._wait(future, f"delete consumer group {group_id!r}")
                except KafkaAdminError as exc:
                    if exc.code in COORDINATOR_LOADING and attempt + 1 < attempts:
                        pending.append(group_id)
                    elif exc.code != KafkaError.GROUP_ID_NOT_FOUND:
                        raise
            if not pending:
                return
            time.sleep(1)
