"""`python -m bench.gateway`: a gateway's own cost (docs/gateways.md). The same librdkafka
clients, connected to the dev stack's destination cluster directly and through a gateway
(Kroxylicious, started as a gateway starts it), in the same run, in turns:

1. **throughput**: a producer writes RECORDS records of SIZE bytes as fast as it can (the raw
   limit's producer, `bench.rdproduce`), then a consumer reads them back; records/s of each;
2. **latency**: a producer at RATE records/s for SECONDS, a consumer reading as they come; each
   record's latency is its read time less its send time (stamped in the record), p50 and p99.

Each is run ROUNDS times per path, alternating, and the median kept. No Django. Writes
var/bench/gateway.json and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from infra import kroxylicious
from infra.consuming import take

from . import rdproduce, sections
from .cluster import DESTINATION, WORK, create_topic, delete_topics, ensure_stack, log

RECORDS, SIZE, ROUNDS = 300_000, 512, 5
RATE, SECONDS = 2_000, 15
PARTITIONS = 4
TOPIC = "bench.gateway"
RESULTS = WORK / "gateway.json"
FIRST_PORT = 39400


def _start_gateway(target: str, folder: Path) -> tuple[kroxylicious.Route, subprocess.Popen]:
    route = kroxylicious.Route("bench", "127.0.0.1", kroxylicious.free_block(FIRST_PORT), target)
    config = folder / "kroxylicious.json"
    kroxylicious.write_config(config, route)
    log_file = (folder / "gateway.log").open("wb")
    proxy = subprocess.Popen(kroxylicious.command(config), stdout=log_file, stderr=log_file)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            kroxylicious.cluster_id(route)
            return route, proxy
        except Exception:  # noqa: BLE001 - not answering yet
            time.sleep(0.5)
    proxy.kill()
    raise RuntimeError(f"the gateway did not answer within 90 s; see {folder / 'gateway.log'}")


def _consume_all(bootstrap: str, records: int) -> float:
    """Records per second reading `records` from the topic's start."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench.gateway", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read, began = 0, time.monotonic()
    while read < records:
        read += sum(1 for m in take(consumer, 10_000, 1.0) if m.error() is None)
        if time.monotonic() - began > 300:
            raise RuntimeError(f"read {read} of {records} records in 300 s")
    rate = records / (time.monotonic() - began)
    consumer.close()
    return rate


def _latencies(bootstrap: str) -> list[float]:
    """Milliseconds from send to read of each record written at RATE for SECONDS."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench.gateway", "enable.auto.commit": False}
    )
    ends = [consumer.get_watermark_offsets(TopicPartition(TOPIC, p))[1] for p in range(PARTITIONS)]
    consumer.assign([TopicPartition(TOPIC, p, ends[p]) for p in range(PARTITIONS)])
    found: list[float] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            for m in take(consumer, 1000, 0.1):
                value = m.value() if m.error() is None else None
                if value:
                    (sent,) = struct.unpack("!d", value[:8])
                    found.append((time.time() - sent) * 1000)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(2)  # the consumer's first fetch under way
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    pad = b"x" * (SIZE - 8)
    began = time.monotonic()
    for n in range(RATE * SECONDS):
        while time.monotonic() < began + n / RATE:
            time.sleep(0.0005)
        rdproduce.send(producer, TOPIC, struct.pack("!d", time.time()) + pad)
        producer.poll(0)
    producer.flush(60)
    deadline = time.monotonic() + 30
    while len(found) < RATE * SECONDS and time.monotonic() < deadline:
        time.sleep(0.2)
    done.set()
    reader.join(10)
    consumer.close()
    return found


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(direct: str, gateway: str) -> dict:
    runs: dict[str, dict[str, list[float]]] = {
        path: {"produce": [], "consume": [], "p50": [], "p99": []} for path in ("direct", "gateway")
    }
    paths = [("direct", direct), ("gateway", gateway)]
    # A first round unmeasured (brokers and proxy warming up), then each path first in turn.
    for round_ in range(-1, ROUNDS):
        for path, bootstrap in paths if round_ % 2 == 0 else paths[::-1]:
            create_topic(direct, TOPIC, PARTITIONS)  # anew: each round reads its own
            produced = rdproduce.produce(bootstrap, TOPIC, RECORDS, SIZE)
            consumed = _consume_all(bootstrap, RECORDS)
            latencies = _latencies(bootstrap)
            if round_ < 0:
                continue
            found = runs[path]
            found["produce"].append(produced)
            found["consume"].append(consumed)
            found["p50"].append(_quantile(latencies, 0.5))
            found["p99"].append(_quantile(latencies, 0.99))
            log(
                f"round {round_ + 1} {path}: produce {produced:,.0f}/s, consume "
                f"{consumed:,.0f}/s, latency p50 {found['p50'][-1]:.1f} ms, p99 "
                f"{found['p99'][-1]:.1f} ms ({len(latencies):,} records)"
            )
    delete_topics(direct, [TOPIC])
    return {
        path: {name: statistics.median(values) for name, values in found.items()}
        for path, found in runs.items()
    }


def section(results: dict) -> str:
    direct, gateway = results["direct"], results["gateway"]

    def share(name: str) -> str:
        return f"{gateway[name] / direct[name]:.2f}×"

    return f"""## A gateway's own cost

`python -m bench.gateway` ({results["when"]}, {results["machine"]}): the same librdkafka
producer and consumer connected to the destination cluster directly and through a gateway
(Kroxylicious 0.12.0, as a gateway starts it: the JVM's client compiler, a 256 MiB heap), in
turns (each first in every other round, after a round unmeasured), {ROUNDS} rounds each,
medians. Throughput: {RECORDS:,} records of {SIZE} bytes over
{PARTITIONS} partitions, written as fast as the producer can (acks=all, idempotent) and read
back from the start. Latency: {RATE:,} records/s for {SECONDS} s, each record's time from send
to read.

| | direct | through the gateway | gateway / direct |
| --- | ---: | ---: | ---: |
| produce, records/s | {direct["produce"]:,.0f} | {gateway["produce"]:,.0f} | {share("produce")} |
| consume, records/s | {direct["consume"]:,.0f} | {gateway["consume"]:,.0f} | {share("consume")} |
| latency p50, ms | {direct["p50"]:.1f} | {gateway["p50"]:.1f} | {share("p50")} |
| latency p99, ms | {direct["p99"]:.1f} | {gateway["p99"]:.1f} | {share("p99")} |
"""


def main() -> int:
    ensure_stack()
    direct = DESTINATION
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as folder:
        route, proxy = _start_gateway(direct, Path(folder))
        try:
            results = measure(direct, route.bootstrap)
        finally:
            proxy.terminate()
            proxy.wait(30)
    results["when"] = time.strftime("%Y-%m-%d")
    results["machine"] = f"{os.cpu_count()} cores, {platform.machine()}"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    sections.GATEWAY.write(section(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
