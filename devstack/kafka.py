"""The two embedded KRaft clusters, of one node each or three (`settings.DEVSTACK_BROKERS`):
their ports, credentials, config and storage. Each node is a broker and a controller."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from infra import secretfile

ROOT = Path(__file__).resolve().parent.parent
KAFKA_RUN = ROOT / "devstack" / "kafka-run"
# The SASL listener's accounts: `admin`, the console's super-user (it writes mirrors past their
# deny-write rule and manages ACLs), and `replicator`, the least-privileged principal links
# read their source with (ordinary rights; docs/user-guide.md, "What `make demo` starts").
SASL_USERS = ("admin", "replicator")
SUPER_USERS = ("admin",)


BROKER_PORT_STEP = 10  # the second broker's ports are the first's plus 10, the third's plus 20


@dataclass(frozen=True)
class Broker:
    """One node of a cluster (broker and controller in one process)."""

    cluster: str
    node_id: int
    plaintext_port: int  # ordinary clients, authenticated as User:ANONYMOUS
    sasl_port: int  # SASL/PLAIN for the privileged admin and replicator principals
    controller_port: int
    alone: bool  # the cluster's only node

    @property
    def name(self) -> str:
        """Its part of the stack: the cluster's name, or with its node id when it has three."""
        return self.cluster if self.alone else f"{self.cluster}-{self.node_id}"

    def home(self, var_dir: Path) -> Path:
        """The first node lives in the cluster's folder (as a one-node cluster always did)."""
        cluster_home = var_dir / "kafka" / self.cluster
        return cluster_home if self.node_id == 1 else cluster_home / f"broker-{self.node_id}"


@dataclass(frozen=True)
class KafkaNode:
    """One embedded cluster, addressed by its first broker's ports (the others follow)."""

    name: str
    plaintext_port: int
    sasl_port: int
    controller_port: int
    size: int = 1

    @property
    def brokers(self) -> list[Broker]:
        return [
            Broker(
                self.name,
                i + 1,
                self.plaintext_port + i * BROKER_PORT_STEP,
                self.sasl_port + i * BROKER_PORT_STEP,
                self.controller_port + i * BROKER_PORT_STEP,
                alone=self.size == 1,
            )
            for i in range(self.size)
        ]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.plaintext_port}" for b in self.brokers)

    @property
    def sasl_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.sasl_port}" for b in self.brokers)

    def home(self, var_dir: Path) -> Path:
        return var_dir / "kafka" / self.name


def port(base: int) -> int:
    """One of the embedded stack's ports as `make demo` has it, shifted by
    ISTHMUS_DEVSTACK_PORT_OFFSET (a second stack beside the first)."""
    return base + settings.DEVSTACK_PORT_OFFSET


SIZE = settings.DEVSTACK_BROKERS
SOURCE = KafkaNode("source", port(9092), port(9192), port(9292), SIZE)
DESTINATION = KafkaNode("destination", port(9093), port(9193), port(9293), SIZE)
NODES = (SOURCE, DESTINATION)


def cluster_of(broker: Broker) -> KafkaNode:
    return next(node for node in NODES if node.name == broker.cluster)


def credentials(var_dir: Path) -> dict[str, str]:
    """Passwords of the privileged principals, generated on first use and kept in var/.

    ISTHMUS_ADMIN_PASSWORD and ISTHMUS_REPLICATOR_PASSWORD take precedence (containers).
    """
    from_env = {u: os.environ.get(f"ISTHMUS_{u.upper()}_PASSWORD") or "" for u in SASL_USERS}
    if all(from_env.values()):
        return from_env

    def generate() -> str:
        return json.dumps({user: secrets.token_urlsafe(18) for user in SASL_USERS})

    return json.loads(secretfile.read_or_create(var_dir / "credentials.json", generate))


def sasl_client_config(
    node: KafkaNode, var_dir: Path, user: str = "admin", bootstrap: str | None = None
) -> dict[str, str]:
    """confluent-kafka client settings for `user` on the node's SASL listener."""
    return {
        "bootstrap.servers": bootstrap or node.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": credentials(var_dir)[user],
    }


def link_credentials(node: KafkaNode, var_dir: Path) -> dict[str, str]:
    """The least-privileged `replicator` as the node's link credentials (no bootstrap.servers:
    they are used at the cluster's registered address)."""
    config = sasl_client_config(node, var_dir, user="replicator")
    del config["bootstrap.servers"]
    return config


def _jaas(users: dict[str, str], include: tuple[str, ...]) -> str:
    accounts = " ".join(f'user_{u}="{users[u]}"' for u in include)
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{users["admin"]}" {accounts};'
    )


def server_properties(broker: Broker, var_dir: Path) -> str:
    users = credentials(var_dir)
    node = cluster_of(broker)
    # Internal topics as the cluster can hold them: on three brokers, as production runs them.
    replicas, in_sync = ("3", "2") if node.size == 3 else ("1", "1")
    props = {
        "process.roles": "broker,controller",
        "node.id": str(broker.node_id),
        "controller.quorum.voters": ",".join(
            f"{b.node_id}@127.0.0.1:{b.controller_port}" for b in node.brokers
        ),
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{broker.plaintext_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{broker.sasl_port},"
            f"CONTROLLER://127.0.0.1:{broker.controller_port}"
        ),
        "advertised.listeners": (
            f"PLAINTEXT://127.0.0.1:{broker.plaintext_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{broker.sasl_port}"
        ),
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
        ),
        "controller.listener.names": "CONTROLLER",
        # Broker-to-controller and inter-broker traffic run as the super user `admin`, so the
        # authorizer never stands between the node and itself.
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        # The clients' SASL listener takes SCRAM too (its credentials are made through the
        # Admin API, as on a real cluster: the batch path's SCRAM test makes its own).
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _jaas(users, ("admin",)),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas(users, SASL_USERS),
        **{
            f"listener.name.sasl_plaintext.scram-sha-{bits}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
            for bits in (256, 512)
        },
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "super.users": ";".join(f"User:{u}" for u in SUPER_USERS),
        "log.dirs": str(broker.home(var_dir) / "data"),
        "num.partitions": "1",
        "default.replication.factor": replicas,
        "min.insync.replicas": in_sync,
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": replicas,
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": in_sync,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": in_sync,
        "group.initial.rebalance.delay.ms": "0",
        # A follower that stops fetching leaves the in-sync set after 10 s, not 30: a copier
        # taking over from one that did not end cleanly waits this long (MirrorWriter.settle_s).
        "replica.lag.time.max.ms": "10000",
        # Retention applies within seconds, not 5 minutes: so a tiny retention shows at once
        # (the verification tests, and whoever tries it on the demo).
        "log.retention.check.interval.ms": "1000",
        # And compaction within seconds, not 15 s after the cleaner last found nothing to do.
        "log.cleaner.backoff.ms": "1000",
    }
    if node.size == 1:
        # Its controller fences a broker it heard nothing from for this long, and with one
        # broker that leaves every partition without a leader until it is heard again. A
        # machine loaded by the tests once stalled its controller past the default 9 s
        # (topics being created refused: "All brokers are currently fenced"); three brokers
        # keep the default, which is how their fault tests see a broker go.
        props["broker.session.timeout.ms"] = "30000"
    return "".join(f"{k}={v}\n" for k, v in props.items())


def write_config(broker: Broker, var_dir: Path) -> Path:
    """Write the node's server.properties (owner-only: it holds passwords) and return its path."""
    home = broker.home(var_dir)
    home.mkdir(parents=True, exist_ok=True)
    path = home / "server.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(server_properties(broker, var_dir))
    return path


def _cluster_id(node: KafkaNode, var_dir: Path) -> str:
    """The id every node of the cluster is formatted with: made once, kept beside them, with
    how many nodes the cluster was made of (its controller quorum cannot change size)."""
    home = node.home(var_dir)
    home.mkdir(parents=True, exist_ok=True)
    made = home / "cluster.id"
    if not made.exists():
        if (on_disk := cluster_id_on_disk(node, var_dir)) is not None:
            made.write_text(f"{on_disk} 1\n")  # formatted before the id was kept here
        else:
            new_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
            made.write_text(f"{new_id} {node.size}\n")
    cluster_id, size = made.read_text().split()
    if int(size) != node.size:
        raise RuntimeError(
            f"the {node.name} cluster in {home} was made with {size} broker(s), and "
            f"ISTHMUS_DEVSTACK_BROKERS asks for {node.size}. Use another ISTHMUS_VAR_DIR, or "
            f"stop the stack and delete {var_dir / 'kafka'} (its topics go with it)."
        )
    return cluster_id


def format_storage(broker: Broker, var_dir: Path) -> None:
    """Format the node's log directory once, with its cluster's id; later calls do nothing."""
    home = broker.home(var_dir)
    cluster_id = _cluster_id(cluster_of(broker), var_dir)
    if (home / "data" / "meta.properties").exists():
        return
    config = write_config(broker, var_dir)
    result = subprocess.run(
        # "=": an id may start with "-", which the tool would take for an option.
        [str(KAFKA_RUN), "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}"]
        + ["-c", str(config)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"Formatting the {broker.name} node's storage in {home / 'data'} failed: "
            f"{(result.stderr or result.stdout).strip()}"
        )


def cluster_id_on_disk(node: KafkaNode, var_dir: Path) -> str | None:
    """The cluster id written by `kafka-storage format` into the first node's meta.properties."""
    meta = node.home(var_dir) / "data" / "meta.properties"
    if not meta.exists():
        return None
    for line in meta.read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.split("=", 1)[1].strip()
    return None


def broker_command(broker: Broker, var_dir: Path) -> list[str]:
    return [str(KAFKA_RUN), "kafka.Kafka", str(write_config(broker, var_dir))]


# More JVM options for the brokers: the tests give their stacks the quick compiler alone (C1),
# which takes a broker's start from 9 s of CPU to 6 and its first minute from 5.5 s to 2.8; a
# stack for benchmarks keeps the JVM's defaults.
JVM_OPTIONS = "ISTHMUS_KAFKA_OPTS"


def broker_env(broker: Broker, var_dir: Path) -> dict[str, str]:
    logs = broker.home(var_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return {
        "KAFKA_HEAP_OPTS": os.environ.get(
            "ISTHMUS_KAFKA_HEAP", "-Xms256m -Xmx1g" if broker.alone else "-Xms256m -Xmx512m"
        ),
        "KAFKA_LOG4J_CONFIG": str(ROOT / "devstack" / "log4j2-broker.properties"),
        "KAFKA_OPTS": f"-Dkafka.logs.dir={logs} -XX:+UseG1GC {os.environ.get(JVM_OPTIONS, '')}",
    }
