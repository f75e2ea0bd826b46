"""The little the command-line tools ask of Kafka itself: the id of the cluster named by
--bootstrap-server, and (for kafka-replica-status) its topics, replicas and log offsets.

The tools are a pure client, installable without the console (see cli/pyproject.toml), so
this module uses confluent-kafka's AdminClient directly and imports nothing from the server's
packages. For the same reason it holds its own small copy of the Java -> librdkafka
translation of client settings (the server's is `replication.link_configs.source_client_config`,
which the tools may not import: the CLI is the top layer, and the server never imports it).
Only the keys a client config needs are translated; keep the two in step.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

# librdkafka logs every failed connection attempt (many a second while a cluster is down);
# the tools report one clear error instead, so its log lines go nowhere.
_quiet = logging.getLogger("isthmus_cli.librdkafka")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False

# Kafka's (Java) names of SSL client settings and librdkafka's for them.
_SSL_RENAMES = {
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.location": "ssl.keystore.location",
    "ssl.keystore.password": "ssl.keystore.password",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.key.password": "ssl.key.password",
}
_JAAS_MODULE = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_LOGIN_MODULES = (
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
)


class KafkaClusterError(Exception):
    """The cluster could not be reached, refused a request, or the client settings are wrong."""


def _jaas_login(line: str) -> tuple[str, str]:
    """(username, password) of a PLAIN or SCRAM `sasl.jaas.config` line."""
    module = _JAAS_MODULE.match(line)
    options = dict(_JAAS_OPTION.findall(line))
    if not module or module.group(1) not in _LOGIN_MODULES:
        raise KafkaClusterError(
            "sasl.jaas.config must use PlainLoginModule or ScramLoginModule, e.g. "
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="u" password="p";'
        )
    if "username" not in options or "password" not in options:
        raise KafkaClusterError('sasl.jaas.config needs username="..." and password="...".')
    return options["username"], options["password"]


def client_config(settings: dict[str, str]) -> dict[str, str]:
    """librdkafka settings from Kafka client settings with Java names (as in a
    --command-config file): bootstrap, security protocol, SASL and SSL; others are ignored."""
    client = {"bootstrap.servers": settings["bootstrap.servers"]}
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    client["security.protocol"] = protocol
    if protocol.startswith("SASL"):
        client["sasl.mechanism"] = settings.get("sasl.mechanism", "PLAIN").upper()
        if "sasl.jaas.config" in settings:
            client["sasl.username"], client["sasl.password"] = _jaas_login(
                settings["sasl.jaas.config"]
            )
        elif "sasl.username" in settings and "sasl.password" in settings:
            client["sasl.username"] = settings["sasl.username"]
            client["sasl.password"] = settings["sasl.password"]
        else:
            raise KafkaClusterError(
                f"security.protocol={protocol} needs sasl.jaas.config, or sasl.username and "
                "sasl.password, in the --command-config file."
            )
    for name, librdkafka_name in _SSL_RENAMES.items():
        if name in settings:
            client[librdkafka_name] = settings[name]
    if "ssl.endpoint.identification.algorithm" in settings:
        client["ssl.endpoint.identification.algorithm"] = (
            settings["ssl.endpoint.identification.algorithm"].lower() or "none"
        )
    return client


@dataclass(frozen=True)
class PartitionReplicas:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    log_start_offset: int
    log_end_offset: int
    leader_epoch: int | None


class KafkaCluster:
    """One cluster, asked through an AdminClient; every failure is a KafkaClusterError."""

    def __init__(self, settings: dict[str, str], timeout: float = 10.0):
        self.bootstrap = settings.get("bootstrap.servers", "?")
        self.timeout = timeout
        self._errors: list[KafkaError] = []
        try:
            self._client = AdminClient(
                {
                    **client_config(settings),
                    "socket.timeout.ms": int(timeout * 1000),
                    "socket.connection.setup.timeout.ms": int(timeout * 1000),
                    "log.connection.close": False,
                    "logger": _quiet,
                    "error_cb": self._errors.append,
                }
            )
        except KafkaException as exc:  # a setting librdkafka refuses, e.g. a missing CA file
            raise KafkaClusterError(_detail(exc)) from exc

    def _fail(self, doing: str, exc: Exception) -> KafkaClusterError:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        self._client.poll(0)  # serves error_cb: why the connection failed
        auth = [e for e in self._errors if e.code() == KafkaError._AUTHENTICATION]
        if auth:  # a failed login shows up on the request as a timeout
            error = auth[-1]
        detail = error.str() if error else str(exc) or type(exc).__name__
        if self._errors and self._errors[-1] is not error:  # e.g. "Connection refused"
            detail += f"; last connection error: {self._errors[-1].str()}"
        hint = ""
        if error and error.code() == KafkaError._AUTHENTICATION:
            hint = " Check the SASL/SSL settings and credentials in the --command-config file."
        elif error is None or error.code() in (
            KafkaError._TRANSPORT,
            KafkaError._TIMED_OUT,
            KafkaError._ALL_BROKERS_DOWN,
        ):
            hint = " Check that the brokers are running and that the address is right."
        return KafkaClusterError(f"Could not {doing} at {self.bootstrap}: {detail}.{hint}")

    def _wait(self, future, doing: str):
        try:
            return future.result(timeout=self.timeout + 1)
        except (KafkaException, TimeoutError) as exc:
            raise self._fail(doing, exc) from exc

    def cluster_id(self) -> str:
        future = self._client.describe_cluster(request_timeout=self.timeout)
        return self._wait(future, "describe the cluster").cluster_id

    def list_topic_names(self) -> set[str]:
        try:
            metadata = self._client.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._fail("list the topics", exc) from exc
        return set(metadata.topics)

    def partition_replicas(self, topic: str) -> list[PartitionReplicas]:
        """Each partition's leader, replicas, in-sync replicas and log offsets."""
        futures = self._client.describe_topics(
            TopicCollection([topic]), request_timeout=self.timeout
        )
        partitions = self._wait(futures[topic], f"describe topic {topic!r}").partitions
        offsets = {}
        for name, spec in (("start", OffsetSpec.earliest()), ("end", OffsetSpec.latest())):
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


def _detail(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else None
    return error.str() if isinstance(error, KafkaError) else str(exc)
