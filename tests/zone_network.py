"""A network zone of its own on this one machine, for the proof that a source cluster behind a
firewall that lets nothing in is copied by the engine beside it (issue 47).

The zone is a Linux network namespace (`unshare -n`, which needs root) with only its own
loopback: its source broker listens there, and its keeper (`manage.py engine`) and engine run
there. Nothing outside can connect in: the test's console, Celery and the console's own engine
find nothing at the source's port. From inside, the zone reaches out to what a zone's host
reaches (Redis and the destination's brokers; the database is a file): each such port has a
listener inside that carries the connection over a Unix socket (the filesystem is shared) to a
listener outside, which connects to the real port.

The carrying's two ends: tests/zone_carrier.py.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from devstack.kafka import KAFKA_RUN
from infra.processes import wait_for
from tests.conftest import ROOT

LOG4J = ROOT / "devstack" / "log4j2-broker.properties"


def unavailable() -> str | None:
    """Why no zone can be made here, or None."""
    if os.geteuid() != 0:
        return "a network namespace needs root (unshare -n)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    tried = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if tried.returncode != 0:
        return f"unshare -n fails here: {tried.stderr.strip()}"
    return None


class Zone:
    """The namespace, held by a process that sleeps in it, and the carrying of `out_ports`."""

    def __init__(self, out_ports: list[int]):
        self.folder = Path(tempfile.mkdtemp(prefix="zone-", dir="/tmp"))  # short socket paths
        self.out_ports = out_ports
        self.holder = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && exec sleep infinity"],
            start_new_session=True,
        )
        self.processes: list[subprocess.Popen] = [self.holder]
        assert wait_for(self._loopback_up, 10, 0.1), "the zone's loopback did not come up"
        carrier = [sys.executable, "-m", "tests.zone_carrier"]
        self._start([*carrier, "outside", str(self.folder), *map(str, out_ports)], inside=False)
        self._start([*carrier, "inside", str(self.folder), *map(str, out_ports)])

    def _loopback_up(self) -> bool:
        shown = subprocess.run(
            [*self.enter, "ip", "-o", "link", "show", "lo"], capture_output=True, text=True
        )
        return "UP" in shown.stdout.split(">")[0]

    @property
    def enter(self) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", "--"]

    def _start(self, command: list[str], inside: bool = True, **options) -> subprocess.Popen:
        if inside:
            command = [*self.enter, *command]
        options.setdefault("cwd", ROOT)
        process = subprocess.Popen(command, start_new_session=True, **options)
        self.processes.append(process)
        return process

    def start(self, command: list[str], log: Path, **options) -> subprocess.Popen:
        """A process in the zone, its output in `log`."""
        with open(log, "wb") as out:
            return self._start(command, stdout=out, stderr=subprocess.STDOUT, **options)

    def run(self, command: list[str], timeout: float = 60) -> str:
        """A command run to its end in the zone; its output."""
        done = subprocess.run(
            [*self.enter, *command], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def stop(self) -> None:
        """Each process stopped in turn, the last started first (a keeper stops its engine
        while Redis is still carried)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def broker_properties(home: Path, port: int, controller_port: int) -> Path:
    """A one-node KRaft cluster in the zone, plain text, formatted with a new id."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(home / "data"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "broker.session.timeout.ms": "30000",
    }
    home.mkdir(parents=True, exist_ok=True)
    path = home / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    subprocess.run(
        [str(KAFKA_RUN), "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}"]
        + ["-c", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def start_broker(zone: Zone, home: Path) -> subprocess.Popen:
    props = home / "server.properties"
    env = {
        **os.environ,
        "KAFKA_HEAP_OPTS": "-Xms128m -Xmx512m",
        "KAFKA_LOG4J_CONFIG": str(LOG4J),
        "KAFKA_OPTS": f"-Dkafka.logs.dir={home / 'logs'} -XX:TieredStopAtLevel=1",
    }
    return zone.start([str(KAFKA_RUN), "kafka.Kafka", str(props)], home / "broker.out", env=env)


# The records the zone's producer writes (`produce`, run in the zone), as it reports them.
PRODUCER = """
import json, sys, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic, partitions, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
written = []
def delivered(err, msg, headers):  # (a delivery report carries no headers)
    assert err is None, err
    written.append([msg.partition(), msg.offset(), msg.key().hex(), msg.value().hex(),
                    [[k, v.hex()] for k, v in headers], list(msg.timestamp())])
# Recent timestamps of their own: one older than the mirror's retention (a week, as the
# source's) would be deleted from the mirror by the destination's retention check.
base = int(time.time() * 1000) - 60_000
for i in range(count):
    headers = [("n", str(i).encode())]
    producer.produce(topic, key=b"k%d" % i, value=b"value %d" % i, partition=i % partitions,
                     headers=headers, timestamp=base + i,
                     on_delivery=lambda err, msg, h=headers: delivered(err, msg, h))
assert producer.flush(30) == 0
print(json.dumps(written))
"""


def produce(zone: Zone, bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple]:
    """Write `count` numbered records to a new topic on the zone's cluster, from inside the
    zone: each as written, (partition, offset, key, value, headers, timestamp)."""
    out = zone.run([sys.executable, "-c", PRODUCER, bootstrap, topic, str(partitions), str(count)])
    return sorted(
        (
            p,
            o,
            bytes.fromhex(k),
            bytes.fromhex(v),
            [(name, bytes.fromhex(h)) for name, h in headers],
            tuple(ts),
        )
        for p, o, k, v, headers, ts in json.loads(out)
    )
