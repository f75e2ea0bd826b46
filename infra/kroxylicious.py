"""Kroxylicious, the Kafka protocol proxy a gateway runs (docs/gateways.md): its configuration,
its command line, whether it answers, and its Prometheus metrics. No Django: the domain
(`replication/kafka/gateways.py`) decides what it routes where.

Kroxylicious 0.12.0 reads its configuration once, at start: it has no reload and no admin
endpoint but its metrics, so a gateway changes its route by a restart with a new file. One
virtual cluster targets exactly one cluster, so a gateway routes all its topics together."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from infra import processes

ROOT = Path(__file__).resolve().parent.parent
JARS = ROOT / ".cache" / "jars" / "kroxylicious"
LAUNCHER = JARS / "launcher"
MAIN = "io.isthmus.gateway.Gateway"
# Node ids 0-9 each get a port after the bootstrap's (the embedded clusters' are 1-3), and
# the metrics endpoint the port after them: a gateway holds 12 consecutive ports.
NODE_IDS = (0, 9)
PORTS = NODE_IDS[1] - NODE_IDS[0] + 3
HIGHEST_FIRST = 65536 - PORTS  # the highest port a gateway's block may start at
# Each switch waits for the JVM's start: the client compiler only and a small heap, which a
# proxy of one virtual cluster needs no more than.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xms64m", "-Xmx256m")


@dataclass(frozen=True)
class Route:
    """A gateway as the proxy needs it: where clients reach it, and the cluster it routes to."""

    name: str
    host: str
    port: int
    target: str  # the target cluster's bootstrap servers

    @property
    def ports(self) -> range:
        """Every port the proxy listens on: bootstrap, one per node id, metrics."""
        return block(self.port)

    @property
    def metrics_port(self) -> int:
        return self.port + PORTS - 1

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def render(route: Route) -> str:
    """The proxy's configuration file (JSON, which Kroxylicious's YAML parser reads): one
    virtual cluster, port-per-node addressing bound to the gateway's host
    (devstack/kroxylicious/'s LoopbackPortPerNode), the metrics on the same host."""
    config = {
        "management": {
            "bindAddress": route.host,
            "port": route.metrics_port,
            "endpoints": {"prometheus": {}},
        },
        "virtualClusters": [
            {
                "name": route.name,
                "targetCluster": {"bootstrapServers": route.target},
                "clusterNetworkAddressConfigProvider": {
                    "type": "io.isthmus.gateway.LoopbackPortPerNode",
                    "config": {
                        "bootstrapAddress": route.bootstrap,
                        "nodeIdRanges": [
                            {
                                "name": "nodes",
                                "range": {
                                    "startInclusive": NODE_IDS[0],
                                    "endExclusive": NODE_IDS[1] + 1,
                                },
                            }
                        ],
                    },
                },
            }
        ],
    }
    return json.dumps(config, indent=2) + "\n"


def write_config(path: Path, route: Route) -> None:
    """Write the configuration readable by its owner only (0600): a target cluster's TLS
    settings may name key stores and their passwords."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(render(route))
    path.chmod(0o600)


def block(first: int) -> range:
    """The ports of a gateway whose bootstrap port is `first`."""
    return range(first, first + PORTS)


def free_block(first: int, host: str = "127.0.0.1") -> int:
    """The first port from `first` (in steps of a block) with a gateway's whole block free on
    `host`: nothing listens on any of its ports now."""
    for port in range(first, HIGHEST_FIRST + 1, PORTS):
        if not any(processes.port_holder(p, host) for p in block(port)):
            return port
    raise RuntimeError(f"No block of {PORTS} free ports on {host} from {first}.")


def installed() -> bool:
    return (LAUNCHER / ".built").exists()


def command(config: Path) -> list[str]:
    if not installed():
        raise FileNotFoundError(
            f"Kroxylicious is missing from {JARS}: run 'make setup', which fetches it."
        )
    classpath = f"{LAUNCHER}:{JARS}/*"
    return ["java", *JVM_OPTIONS, "-cp", classpath, MAIN, str(config)]


def cluster_id(route: Route, timeout: float = 3.0) -> str:
    """The id of the cluster the proxy routes to now, asked through the proxy itself."""
    from .admin_client import AdminClient

    admin = AdminClient(
        {
            "bootstrap.servers": route.bootstrap,
            "socket.timeout.ms": int(timeout * 1000),
            "log_level": 0,
        }
    )
    return str(
        admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 1).cluster_id
    )


_SAMPLE = re.compile(r"^(kroxylicious_[a-z_]+)\{([^}]*)\}\s+([0-9.eE+-]+)$")


def metrics(route: Route, timeout: float = 2.0) -> dict[str, float]:
    """The proxy's own counters for its virtual cluster (the downstream connections it has
    accepted since it started, …), by name; empty when it does not answer."""
    url = f"http://{route.host}:{route.metrics_port}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - our own address
            text = resp.read().decode()
    except OSError:
        return {}
    return parse_metrics(text, route.name)


def parse_metrics(text: str, virtual_cluster: str) -> dict[str, float]:
    """The samples of `virtual_cluster` that carry no other label, by metric name."""
    found = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(2) == f'virtualCluster="{virtual_cluster}"':
            found[match.group(1)] = float(match.group(3))
    return found
