"""The two embedded single-node KRaft clusters: their ports, credentials, config and storage."""

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
# read their source with (ordinary rights; README, "Least privilege").
SASL_USERS = ("admin", "replicator")
SUPER_USERS = ("admin",)


@dataclass(frozen=True)
class KafkaNode:
    """One single-node cluster (broker and controller in one process)."""

    name: str
    plaintext_port: int  # ordinary clients, authenticated as User:ANONYMOUS
    sasl_port: int  # SASL/PLAIN for the privileged admin and replicator principals
    controller_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.plaintext_port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def home(self, var_dir: Path) -> Path:
        return var_dir / "kafka" / self.name


def port(base: int) -> int:
    """One of the embedded stack's ports as `make demo` has it, shifted by
    ISTHMUS_DEVSTACK_PORT_OFFSET (a second stack beside the first)."""
    return base + settings.DEVSTACK_PORT_OFFSET


SOURCE = KafkaNode("source", port(9092), sasl_port=port(9192), controller_port=port(9292))
DESTINATION = KafkaNode("destination", port(9093), sasl_port=port(9193), controller_port=port(9293))
NODES = (SOURCE, DESTINATION)


def credentials(var_dir: Path) -> dict[str, str]:
    """Passwords of the privileged principals, generated on first use and kept in var/.

    ISTHMUS_ADMIN_PASSWORD and ISTHMUS_REPLICATOR_PASSWORD take precedence (containers).
    """
    from_env = {u: os.environ.get(f"ISTHMUS_{u.upper()}_PASSWORD") for u in SASL_USERS}
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


def server_properties(node: KafkaNode, var_dir: Path) -> str:
    users = credentials(var_dir)
    home = node.home(var_dir)
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{node.controller_port}",
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{node.plaintext_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{node.sasl_port},"
            f"CONTROLLER://127.0.0.1:{node.controller_port}"
        ),
        "advertised.listeners": (
            f"PLAINTEXT://127.0.0.1:{node.plaintext_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}"
        ),
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
        ),
        "controller.listener.names": "CONTROLLER",
        # Broker-to-controller and inter-broker traffic run as the super user `admin`, so the
        # authorizer never stands between the node and itself.
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _jaas(users, ("admin",)),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas(users, SASL_USERS),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "super.users": ";".join(f"User:{u}" for u in SUPER_USERS),
        "log.dirs": str(home / "data"),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Retention applies within seconds, not 5 minutes: so a tiny retention shows at once
        # (the verification tests, and whoever tries it on the demo).
        "log.retention.check.interval.ms": "1000",
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def write_config(node: KafkaNode, var_dir: Path) -> Path:
    """Write the node's server.properties (owner-only: it holds passwords) and return its path."""
    home = node.home(var_dir)
    home.mkdir(parents=True, exist_ok=True)
    path = home / "server.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(server_properties(node, var_dir))
    return path


def format_storage(node: KafkaNode, var_dir: Path) -> None:
    """Format the node's log directory once, with a fresh cluster id; later calls do nothing."""
    home = node.home(var_dir)
    if (home / "data" / "meta.properties").exists():
        return
    config = write_config(node, var_dir)
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    result = subprocess.run(
        # "=": an id may start with "-", which the tool would take for an option.
        [str(KAFKA_RUN), "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}"]
        + ["-c", str(config)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"Formatting the {node.name} cluster's storage in {home / 'data'} failed: "
            f"{(result.stderr or result.stdout).strip()}"
        )


def cluster_id_on_disk(node: KafkaNode, var_dir: Path) -> str | None:
    """The cluster id written by `kafka-storage format` into meta.properties."""
    meta = node.home(var_dir) / "data" / "meta.properties"
    if not meta.exists():
        return None
    for line in meta.read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.split("=", 1)[1].strip()
    return None


def broker_command(node: KafkaNode, var_dir: Path) -> list[str]:
    return [str(KAFKA_RUN), "kafka.Kafka", str(write_config(node, var_dir))]


def broker_env(node: KafkaNode, var_dir: Path) -> dict[str, str]:
    logs = node.home(var_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return {
        "KAFKA_HEAP_OPTS": os.environ.get("ISTHMUS_KAFKA_HEAP", "-Xms256m -Xmx1g"),
        "KAFKA_LOG4J_CONFIG": str(ROOT / "devstack" / "log4j2-broker.properties"),
        "KAFKA_OPTS": f"-Dkafka.logs.dir={logs} -XX:+UseG1GC",
    }
