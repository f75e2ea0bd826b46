"""A thin adapter over confluent-kafka's AdminClient that speaks in operator terms.

Every failure becomes a KafkaAdminError whose message says what went wrong and what to check.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
    TopicDescription,
)

logger = logging.getLogger("librdkafka")


def exact_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter that matches `binding` alone (to delete exactly it)."""
    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def kafka_id(text: str) -> str:
    """A topic id as Kafka's own tools print it (URL-safe base64, no padding), from
    librdkafka's standard base64 form: DL5/DPMpSd+fkWYJY5QgxQ -> DL5_DPMpSd-fkWYJY5QgxQ."""
    return text.replace("+", "-").replace("/", "_").rstrip("=")


def kafka_uuid(value: uuid.UUID) -> str:
    """A UUID as Kafka prints its ids: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


class KafkaAdminError(Exception):
    """A cluster could not be reached or refused a request."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class Unreachable(KafkaAdminError):
    """The cluster did not answer (down, out of reach, or the login failed): any request to it
    fails alike, whatever it asks for."""


class InvalidClientConfig(KafkaAdminError):
    """librdkafka refuses a client setting (e.g. an unknown property, a missing CA file)."""


class TopicNotFound(KafkaAdminError):
    """The topic does not exist on that cluster."""


class AuthorizerDisabled(KafkaAdminError):
    """The cluster runs no authorizer, so it has no ACLs to set."""


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True)
class PartitionReplicas:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    log_start_offset: int
    log_end_offset: int
    leader_epoch: int | None


@dataclass(frozen=True)
class TopicDetail:
    """A topic with each partition's leader, replicas and in-sync replicas."""

    name: str
    is_internal: bool
    partitions: list[PartitionReplicas]  # log offsets -1: not read here


@dataclass(frozen=True)
class ConfigDetail:
    """One config as Kafka describes it, with where its value comes from."""

    name: str
    value: str | None
    source: str  # Kafka's names: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    synonyms: list[tuple[str, str | None, str]]  # (name, value, source), most specific first


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
class NewTopicSpec:
    """A topic to create: `replication_factor` None is the cluster's default."""

    name: str
    partitions: int
    replication_factor: int | None
    configs: dict[str, str]


# A KRaft controller refuses a request that would write more than 10,000 metadata records
# ("excessively large batch operation"): a new topic writes one, and one for each of its
# partitions and configs. 1,000 topics of 10 partitions are 11,000.
MAX_RECORDS_PER_REQUEST = 5_000
Result = TypeVar("Result")
OffsetsRequest = dict[TopicPartition, OffsetSpec]
# Where offsets are read at: one shared value each (confluent-kafka leaves these unannotated).
LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
# What a client says when the cluster as a whole does not answer (a failed login included).
_UNREACHABLE = {
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._AUTHENTICATION,
}


def topic_batches(topics: list[NewTopicSpec]) -> Iterator[list[NewTopicSpec]]:
    """`topics` in order, in batches the controller takes in one request each."""
    batch: list[NewTopicSpec] = []
    records = 0
    for topic in topics:
        cost = 1 + max(topic.partitions, 1) + len(topic.configs or {})
        if batch and records + cost > MAX_RECORDS_PER_REQUEST:
            yield batch
            batch, records = [], 0
        batch.append(topic)
        records += cost
    if batch:
        yield batch


@dataclass(frozen=True)
class ConfigValue:
    value: str | None
    is_set: bool  # set on the topic itself rather than inherited from a default


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str
    broker_count: int
    controller_id: int | None


def acl_filter(
    resource_type: ResourceType = ResourceType.ANY,
    name: str | None = None,
    pattern: ResourcePatternType = ResourcePatternType.ANY,
) -> AclBindingFilter:
    """The filter of every ACL on resources of `resource_type` (named `name`, if given), of
    any principal, host, operation and permission."""
    # confluent-kafka's stubs want text for the name, principal and host; None matches any.
    return AclBindingFilter(
        resource_type,
        name,  # type: ignore[arg-type]
        pattern,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


EVERY_ACL = acl_filter()


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


# librdkafka's words for a connection that failed, and what they mean to an operator.
_CONNECTION_WORDS = [
    ("Connection refused", "nothing accepts connections at that address (connection refused)"),
    ("Failed to resolve", "the host name cannot be resolved (no such host)"),
    (
        "connecting to a PLAINTEXT broker listener",
        "the client speaks TLS (security.protocol) but that listener is plain text",
    ),
    (
        "SSL handshake failed",
        "the TLS handshake failed: check the trust store and the broker's certificate",
    ),
    (
        "in state APIVERSION_QUERY",
        "the broker closed the connection at once: is it a TLS or SASL listener, spoken to "
        "in plain text?",
    ),
    ("brokers are down", "no broker answered"),
]


def connection_words(detail: str, timeout: float) -> str | None:
    """What a connection failure in librdkafka's words means, in an operator's; None when the
    failure is not one of a connection (the client's own words then say it best)."""
    for clue, words in _CONNECTION_WORDS:
        if clue in detail:
            return words
    if "Timed out" in detail or "timed out" in detail:
        return f"no broker answered within {timeout:g} s"
    return None


def _without_client_noise(detail: str) -> str:
    """librdkafka's message without the connection it came from and the state it was in:
    "sasl_plaintext://h:9192/bootstrap: SASL authentication error: … (after 301ms in state
    AUTH_REQ)" → "SASL authentication error: …"."""
    detail = re.sub(r"^\S+://\S+/(?:bootstrap|\d+): ", "", detail)
    return re.sub(r" \(after \d+ms in state \w+\)", "", detail)


class AdminCalls:
    """The admin calls made of other calls, alike for every admin at the seam
    (`replication.kafka.connections`): this module's KafkaAdmin and the tests' in-memory one."""

    # What each admin answers itself.

    def topic_partition_counts(self) -> dict[str, int]:
        raise NotImplementedError

    def topics_configs(self, names: Iterable[str]) -> dict[str, dict[str, ConfigValue]]:
        raise NotImplementedError

    def create_topics(
        self, topics: list[NewTopicSpec], validate_only: bool = False
    ) -> dict[str, KafkaAdminError]:
        raise NotImplementedError

    def offsets(
        self, partitions: Iterable[tuple[str, int]], at: str | int = "latest"
    ) -> dict[tuple[str, int], int]:
        raise NotImplementedError

    def group_details(self, group_ids: Iterable[str]) -> dict[str, GroupDetail]:
        raise NotImplementedError

    # What they make of it.

    def list_topic_names(self) -> set[str]:
        return set(self.topic_partition_counts())

    def topic_configs(self, name: str) -> dict[str, ConfigValue]:
        return self.topics_configs([name])[name]

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int | None,
        configs: dict[str, str],
        validate_only: bool = False,
    ) -> None:
        spec = NewTopicSpec(name, partitions, replication_factor, configs)
        failed = self.create_topics([spec], validate_only)
        if name in failed:
            raise failed[name]

    def end_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        """The log end offset (high watermark) of each partition."""
        found = self.offsets([(topic, p) for p in range(partitions)])
        return {p: offset for (_, p), offset in found.items()}

    def start_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        """The log start offset of each partition."""
        found = self.offsets([(topic, p) for p in range(partitions)], "earliest")
        return {p: offset for (_, p), offset in found.items()}

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupInfo]:
        """Each group's state and member count, all in one call; a group the coordinator
        does not know is Dead with no members."""
        return {
            g.group_id: GroupInfo(g.group_id, g.state, len(g.members))
            for g in self.group_details(group_ids).values()
        }


class KafkaAdmin(AdminCalls):
    def __init__(self, config: dict[str, str], timeout: float = 5.0):
        self.bootstrap = config.get("bootstrap.servers", "?")
        self.timeout = timeout
        # The client's own errors (a failed login, a broker gone), the newest kept.
        self._client_errors: deque[KafkaError] = deque(maxlen=50)
        self.failed = False  # a request failed: its owner should not reuse it
        try:
            self._client = AdminClient(
                {
                    **config,
                    "socket.timeout.ms": int(timeout * 1000),
                    "socket.connection.setup.timeout.ms": int(timeout * 1000),
                    "log.connection.close": False,
                    # The stubs take only text and numbers; the client takes these too.
                    "logger": logger,  # type: ignore[dict-item]
                    "error_cb": self._client_errors.append,  # type: ignore[dict-item]
                }
            )
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            detail = error.str() if isinstance(error, KafkaError) else str(exc)
            raise InvalidClientConfig(detail) from exc

    def clear_client_errors(self) -> None:
        """Take the client's queued errors and forget them: a reused client's next failure is
        then explained by what happened since, not by an old disconnection."""
        self._client.poll(0)
        self._client_errors.clear()

    def _fail(self, doing: str, exc: Exception) -> KafkaAdminError:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        # A failed login shows up on the request as a timeout; the client's own error says why.
        self.failed = True
        self._client.poll(0)
        recent = list(self._client_errors)
        auth_errors = [e for e in recent if e.code() == KafkaError._AUTHENTICATION]
        if auth_errors:
            error = auth_errors[-1]
        detail = error.str() if error else str(exc) or type(exc).__name__
        if recent and recent[-1] is not error:
            detail += f"; last connection error: {recent[-1].str()}"
        if not auth_errors:
            detail = connection_words(detail, self.timeout) or detail
        detail = _without_client_noise(detail)
        whole = error is None or error.code() in _UNREACHABLE  # None: the request timed out
        hint = ""
        if error and error.code() == KafkaError._AUTHENTICATION:
            hint = " Check the SASL/SSL settings and credentials in the client config."
        elif whole:
            hint = " Check that the brokers are running and that bootstrap.servers is right."
        return (Unreachable if whole else KafkaAdminError)(
            f"Could not {doing} at {self.bootstrap}: {detail}.{hint}",
            code=error.code() if error else None,
        )

    def _wait(self, future: Future[Result], doing: str) -> Result:
        try:
            return future.result(timeout=self.timeout + 1)
        except (KafkaException, TimeoutError) as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise TopicNotFound(f"Could not {doing}: no such topic.") from exc
            if error is not None and error.code() == KafkaError.SECURITY_DISABLED:
                raise AuthorizerDisabled(
                    f"Could not {doing}: the cluster has no authorizer."
                ) from exc
            raise self._fail(doing, exc) from exc

    def describe_cluster(self) -> ClusterDescription:
        future = self._client.describe_cluster(request_timeout=self.timeout)
        result = self._wait(future, "describe the cluster")
        controller = result.controller.id if result.controller else None
        return ClusterDescription(result.cluster_id, len(result.nodes), controller)

    def broker_configs(self, names: list[str]) -> dict[str, str | None]:
        """The values of the named configs on one of the cluster's brokers (each broker of a
        cluster is normally configured alike)."""
        found = self._wait(
            self._client.describe_cluster(request_timeout=self.timeout), "describe the cluster"
        )
        broker = found.nodes[0].id
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        futures = self._client.describe_configs([resource], request_timeout=self.timeout)
        entries = self._wait(futures[resource], f"describe broker {broker}'s configs")
        return {name: entries[name].value if name in entries else None for name in names}

    def topic_partition_counts(self) -> dict[str, int]:
        """Every topic with its number of partitions, from one metadata request."""
        try:
            metadata = self._client.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._fail("list the topics", exc) from exc
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()}

    def describe_topic(self, name: str) -> TopicInfo:
        futures = self._client.describe_topics(
            TopicCollection([name]), request_timeout=self.timeout
        )
        result = self._wait(futures[name], f"describe topic {name!r}")
        replicas = len(result.partitions[0].replicas) if result.partitions else 0
        return TopicInfo(name, kafka_id(str(result.topic_id)), len(result.partitions), replicas)

    def _described(self, names: Iterable[str]) -> dict[str, TopicDescription]:
        """Kafka's description of each topic of `names` that exists, in one request."""
        names = sorted(set(names))
        if not names:
            return {}
        futures = self._client.describe_topics(TopicCollection(names), request_timeout=self.timeout)
        found = {}
        for name, future in futures.items():
            with contextlib.suppress(TopicNotFound):
                found[name] = self._wait(future, f"describe topic {name!r}")
        return found

    def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        """Each topic that exists of `names`, in one request; missing ones are left out."""
        return {
            name: TopicInfo(
                name,
                kafka_id(str(d.topic_id)),
                len(d.partitions),
                len(d.partitions[0].replicas) if d.partitions else 0,
            )
            for name, d in self._described(names).items()
        }

    def partition_counts(self, names: list[str]) -> dict[str, int]:
        """How many partitions each topic has, in one request."""
        futures = self._client.describe_topics(TopicCollection(names), request_timeout=self.timeout)
        return {
            name: len(self._wait(future, f"describe topic {name!r}").partitions)
            for name, future in futures.items()
        }

    def topic_details(self, names: Iterable[str]) -> dict[str, TopicDetail]:
        """Each topic of `names` that exists, with its partitions' replicas, in one request."""
        return {
            name: TopicDetail(
                name,
                d.is_internal,
                [
                    PartitionReplicas(
                        partition=p.id,
                        leader=p.leader.id if p.leader else None,
                        replicas=[r.id for r in p.replicas],
                        isr=[r.id for r in p.isr],
                        log_start_offset=-1,
                        log_end_offset=-1,
                        leader_epoch=None,
                    )
                    for p in sorted(d.partitions, key=lambda p: p.id)
                ],
            )
            for name, d in self._described(names).items()
        }

    def topics_configs(self, names: Iterable[str]) -> dict[str, dict[str, ConfigValue]]:
        """`topic_configs` of each of `names`, in one request."""
        resources = {name: ConfigResource(ResourceType.TOPIC, name) for name in sorted(set(names))}
        if not resources:
            return {}
        futures = self._client.describe_configs(
            list(resources.values()), request_timeout=self.timeout
        )
        found = {}
        for name, resource in resources.items():
            entries = self._wait(futures[resource], f"read the configs of topic {name!r}")
            found[name] = {
                c.name: ConfigValue(c.value, c.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
                for c in entries.values()
            }
        return found

    def topic_config_details(self, name: str) -> list[ConfigDetail]:
        """Every config of topic `name`, set or not, with its source and synonyms."""
        resource = ConfigResource(ResourceType.TOPIC, name)
        futures = self._client.describe_configs([resource], request_timeout=self.timeout)
        entries = self._wait(futures[resource], f"read the configs of topic {name!r}")

        def source(entry: ConfigEntry) -> str:
            return ConfigSource(entry.source).name if entry.source is not None else "UNKNOWN"

        return [
            ConfigDetail(
                key,
                entry.value,
                source(entry),
                entry.is_default,
                entry.is_read_only,
                entry.is_sensitive,
                [(s.name, s.value, source(s)) for s in entry.synonyms.values()],
            )
            for key, entry in sorted(entries.items())
        ]

    def group_details(self, group_ids: Iterable[str]) -> dict[str, GroupDetail]:
        """Each group with its members and their assignments, all in one call."""
        ids = sorted(set(group_ids))
        if not ids:
            return {}
        futures = self._client.describe_consumer_groups(ids, request_timeout=self.timeout)
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

    def create_topics(
        self, topics: list[NewTopicSpec], validate_only: bool = False
    ) -> dict[str, KafkaAdminError]:
        """Create (or, with `validate_only`, have the controller check) every topic, in as few
        requests as the controller takes (`topic_batches`); what each failed with, by name
        (none: all of them were made)."""
        failed = {}
        for batch in topic_batches(topics):
            new = [
                NewTopic(t.name, t.partitions, t.replication_factor or -1, config=t.configs)
                for t in batch
            ]
            futures = self._client.create_topics(
                new, request_timeout=self.timeout, validate_only=validate_only
            )
            for name, future in futures.items():
                try:
                    self._wait(future, f"create topic {name!r}")
                except KafkaAdminError as exc:
                    failed[name] = exc
        return failed

    def delete_topics(self, names: Iterable[str]) -> None:
        """Delete each of `names` that exists, in one request."""
        names = sorted(set(names))
        if not names:
            return
        futures = self._client.delete_topics(names, request_timeout=self.timeout)
        for name, future in futures.items():
            with contextlib.suppress(TopicNotFound):
                self._wait(future, f"delete topic {name!r}")

    def delete_topic(self, name: str) -> None:
        futures = self._client.delete_topics([name], request_timeout=self.timeout)
        self._wait(futures[name], f"delete topic {name!r}")

    def delete_records(self, topic: str, before: dict[int, int]) -> None:
        """Move each partition's log start up to `before[p]`: the records below it go."""
        wanted = [TopicPartition(topic, p, o) for p, o in before.items() if o > 0]
        if not wanted:
            return
        futures = self._client.delete_records(wanted, request_timeout=self.timeout)
        for future in futures.values():
            self._wait(future, f"delete the oldest records of {topic!r}")

    def create_partitions(self, name: str, total: int) -> None:
        futures = self._client.create_partitions(
            [NewPartitions(name, total)], request_timeout=self.timeout
        )
        self._wait(futures[name], f"grow topic {name!r} to {total} partitions")

    def alter_topic_configs(self, name: str, to_set: dict[str, str], to_delete: list[str]) -> None:
        entries = [
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in to_set.items()
        ] + [
            ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in to_delete
        ]
        resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
        futures = self._client.incremental_alter_configs([resource], request_timeout=self.timeout)
        self._wait(futures[resource], f"change the configs of topic {name!r}")

    def create_acls(self, bindings: list[AclBinding]) -> None:
        futures = self._client.create_acls(bindings, request_timeout=self.timeout)
        for future in futures.values():
            self._wait(future, "create ACLs")

    def delete_acls(self, filters: list[AclBindingFilter]) -> None:
        futures = self._client.delete_acls(filters, request_timeout=self.timeout)
        for future in futures.values():
            self._wait(future, "delete ACLs")

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACL bindings `acl_filter` matches."""
        future = self._client.describe_acls(acl_filter, request_timeout=self.timeout)
        return list(self._wait(future, "read the ACLs"))

    def offsets(
        self, partitions: Iterable[tuple[str, int]], at: str | int = "latest"
    ) -> dict[tuple[str, int], int]:
        """Each (topic, partition)'s offset `at`: "latest" (the high watermark), "earliest"
        (the log start) or a time in ms (the first record at or after it, else -1)."""
        spec = {"latest": LATEST, "earliest": EARLIEST}.get(str(at))
        if spec is None:
            spec = OffsetSpec.for_timestamp(int(at))
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        exact = at in ("latest", "earliest")
        for _ in range(4):
            try:
                return self._read_offsets(request, exact)
            except KafkaAdminError as exc:
                # Partitions added since this client last read the metadata ("unknown
                # partition", "no leaders found", "not leader"): read it again and retry.
                if isinstance(exc, TopicNotFound) or not re.search(
                    "partition|leader", str(exc), re.IGNORECASE
                ):
                    raise
                time.sleep(0.2)
                for topic in {t for t, _ in partitions}:
                    with contextlib.suppress(KafkaException):
                        self._client.list_topics(topic=topic, timeout=self.timeout)
        return self._read_offsets(request, exact)

    def _read_offsets(self, request: OffsetsRequest, exact: bool) -> dict[tuple[str, int], int]:
        """The offsets asked for; with `exact` (an end or a start), a negative one is refused:
        while a partition's leader moves, the client may answer "no offset" (-1001) without
        an error, and taken for an offset it would place a copy or a comparison at -1001."""
        found, unread = self._offsets_read(request, exact)
        if unread:
            (topic, partition), why = min(unread.items())
            raise KafkaAdminError(f"Could not read the offsets of topic {topic!r}: {why}")
        return found

    def readable_offsets(
        self, partitions: Iterable[tuple[str, int]], at: str = "latest"
    ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
        """`offsets` of those partitions that have a leader to say now, in one request, and
        why each of the others has none yet ("not leader": a new topic's partitions get their
        leaders over a few seconds). The client's metadata is read again for the next try,
        also when a topic is not known yet: else its cached metadata goes on saying so."""
        spec = {"latest": LATEST, "earliest": EARLIEST}[at]
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}, {}
        try:
            found, unread = self._offsets_read(request, exact=True, partial=True)
        except TopicNotFound:
            self._read_metadata()
            raise
        if unread:
            self._read_metadata()
        return found, unread

    def _read_metadata(self) -> None:
        with contextlib.suppress(KafkaException):
            self._client.list_topics(timeout=self.timeout)

    def _offsets_read(
        self, request: OffsetsRequest, exact: bool, partial: bool = False
    ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
        futures = self._client.list_offsets(request, request_timeout=self.timeout)
        found, unread = {}, {}
        for tp, future in futures.items():
            where = (tp.topic, tp.partition)
            try:
                offset = self._wait(future, f"read the offsets of topic {tp.topic!r}").offset
            except TopicNotFound:
                raise
            except KafkaAdminError as exc:
                if not (partial and re.search("partition|leader", str(exc), re.IGNORECASE)):
                    raise
                unread[where] = str(exc)
                continue
            if exact and offset < 0:
                unread[where] = (
                    f"partition {tp.partition}'s leader gave none (it is moving); try again in "
                    "a moment."
                )
                continue
            found[where] = offset
        return found, unread

    def partition_replicas(self, topic: str) -> list[PartitionReplicas]:
        """Each partition's leader, replicas, in-sync replicas and log offsets."""
        futures = self._client.describe_topics(
            TopicCollection([topic]), request_timeout=self.timeout
        )
        partitions = self._wait(futures[topic], f"describe topic {topic!r}").partitions
        offsets = {}
        for name, spec in (("start", EARLIEST), ("end", LATEST)):
            request = {TopicPartition(topic, p.id): spec for p in partitions}
            for tp, future in self._client.list_offsets(
                request, request_timeout=self.timeout
            ).items():
                offsets[name, tp.partition] = self._wait(
                    future, f"read the offsets of topic {topic!r}"
                )
        return [
            PartitionReplicas(
                partition=p.id,
                leader=p.leader.id if p.leader else None,
                replicas=[r.id for r in p.replicas],
                isr=[r.id for r in p.isr],
                log_start_offset=offsets["start", p.id].offset,
                log_end_offset=offsets["end", p.id].offset,
                leader_epoch=offsets["end", p.id].leader_epoch,
            )
            for p in sorted(partitions, key=lambda p: p.id)
        ]

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
                self._client.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group_id)], request_timeout=self.timeout
                )
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
            futures.update(
                self._client.alter_consumer_group_offsets([request], request_timeout=self.timeout)
            )
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
            futures = self._client.delete_consumer_groups(pending, request_timeout=self.timeout)
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

    def authorizer_enabled(self) -> bool:
        """Whether the brokers run an authorizer (ACLs are enforced)."""
        try:
            self._wait(
                self._client.describe_acls(EVERY_ACL, request_timeout=self.timeout), "read the ACLs"
            )
        except AuthorizerDisabled:
            return False
        return True
