"""`make soak`: mirrors kept up through faults for half an hour, then proven identical.

The whole embedded stack (`make demo`'s parts: clusters, Redis, the Celery worker and beat, the
verifier, the web console) on three-broker clusters of its own (ports shifted by 3000, state in
var/soak-stack/, set by `make soak`), with `--links` links (3), each mirroring one topic of 4
partitions, replication factor 3, min.insync.replicas 2. Producers write `--rate` records a
second (5,000) spread over the links' topics for `--minutes` (30), each record once (idempotent
producers), while a fault is injected every `--fault-every` seconds on average (60), chosen at
random: a broker restarted, a broker killed with `kill -9` and started again, the engine killed
with `kill -9` (the supervisor starts it again), the Celery worker killed with `kill -9` and
started again, Redis restarted, a link paused for 20 s and resumed. The lag of every mirror is
read every 5 s throughout. Then the producers stop, every mirror catches up, and each is
verified: what the background verification found (nothing may differ, no record lost) and a
verification of every record it holds. Writes var/bench/soak.json and the soak's section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from . import sections
from .cluster import ROOT, WORK, log
from .report import machine

RESULTS = WORK / "soak.json"
PARTITIONS = 4


def _fresh() -> None:
    """Each soak starts on new clusters and a new database: the stack's data of the last one
    (var/soak-stack/ only, and only while nothing of it runs) goes."""
    var = Path(os.environ.get("ISTHMUS_VAR_DIR", ""))
    if var.name != "soak-stack" or any((var / "run").glob("*.pid")):
        return
    shutil.rmtree(var / "kafka", ignore_errors=True)
    shutil.rmtree(var / "redis", ignore_errors=True)
    for database in var.glob("isthmus.sqlite3*"):
        database.unlink()


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


class Producers(threading.Thread):
    """Writes `rate` records a second over `topics`, round robin, until stopped; each record
    (key: topic and number) once, whatever the source brokers do (an idempotent producer)."""

    def __init__(self, topics: list[str], rate: int):
        super().__init__(daemon=True)
        self.topics, self.rate = topics, rate
        self.written = 0
        self.failed: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer

        from devstack import kafka

        producer = Producer(
            {
                "bootstrap.servers": kafka.SOURCE.bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 600_000,
            }
        )
        started = time.monotonic()

        def failed(err, _msg) -> None:
            if err is not None:
                self.failed.append(err.str())

        while not self.done.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.written < due:
                i = self.written
                topic = self.topics[i % len(self.topics)]
                try:
                    producer.produce(
                        topic,
                        key=f"{i}".encode(),
                        value=os.urandom(100),
                        partition=(i // len(self.topics)) % PARTITIONS,
                        # No timestamp of our own: the producer's clock. (One a millisecond
                        # per record ran hours ahead, and brokers refuse records stamped over
                        # log.message.timestamp.after.max.ms, an hour, in the future.)
                        headers=[("i", str(i).encode())],
                        on_delivery=failed,
                    )
                except BufferError:
                    break
                self.written += 1
            producer.poll(0.01)
        producer.flush(600)


class Soak:
    def __init__(self, args):
        from django.conf import settings

        from devstack.stack import Stack
        from replication.governance import audit

        self.args = args
        self.stack = Stack(settings.VAR_DIR)
        self.actor = audit.Actor.system("soak")
        self.faults: list[dict] = []
        self.lags: list[tuple[float, int]] = []  # (seconds into the soak, worst lag)
        self.random = random.Random(args.seed)  # noqa: S311 - faults chosen, not secrets

    # --- set-up ---------------------------------------------------------------------------

    def set_up(self) -> list:
        from django.conf import settings

        from devstack import kafka
        from infra.kafka_admin import KafkaAdmin
        from replication.core.errors import ReplicationError
        from replication.kafka.clusters import register_cluster
        from replication.models import ClusterLink, KafkaCluster
        from replication.topics.link_creation import create_link
        from replication.topics.mirrors import create_mirror

        if settings.DEVSTACK_BROKERS != 3:
            log("Note: one-broker clusters (ISTHMUS_DEVSTACK_BROKERS=3 is what make soak runs)")
        self.stack.up(echo=log)
        clusters = {}
        for node in kafka.NODES:
            found = KafkaCluster.objects.filter(name=node.name).first()
            if found is None:
                config = dict(kafka.sasl_client_config(node, settings.VAR_DIR))
                bootstrap = config.pop("bootstrap.servers")
                found = register_cluster(
                    self.actor,
                    node.name,
                    bootstrap,
                    config,
                    kafka.link_credentials(node, settings.VAR_DIR),
                )
            clusters[node.name] = found
        source = KafkaAdmin(kafka.sasl_client_config(kafka.SOURCE, settings.VAR_DIR))
        stamp = time.strftime("%m%d%H%M")
        topics = [f"soak.{stamp}.{n}" for n in range(self.args.links)]
        for topic in topics:
            source.create_topic(topic, PARTITIONS, None, {"min.insync.replicas": "2"})
        mirrors = []
        for n, topic in enumerate(topics):
            link = ClusterLink.objects.filter(name=f"soak-{n}").first() or create_link(
                self.actor, clusters["destination"], f"soak-{n}", {}, source=clusters["source"]
            )
            deadline = time.monotonic() + 60
            while True:  # until the broker the link asks knows the new topic
                try:
                    mirrors.append(create_mirror(self.actor, link, topic))
                    break
                except ReplicationError as exc:
                    if exc.status != 404 or time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        return mirrors

    # --- faults -------------------------------------------------------------------------------

    def broker(self):
        from devstack import kafka

        node = self.random.choice(kafka.NODES)
        return self.random.choice(node.brokers)

    def restart_broker(self) -> str:
        broker = self.broker()
        self.stack.down([broker.name], echo=lambda _: None)
        self.stack.up([broker.name], echo=lambda _: None)
        return f"{broker.name} restarted"

    def kill_broker(self) -> str:
        from infra import processes

        broker = self.broker()
        processes.stop(self.stack.pidfile(broker.name), sig=signal.SIGKILL)
        time.sleep(5)
        self.stack.up([broker.name], echo=lambda _: None)
        return f"{broker.name} killed with kill -9, started again 5 s later"

    def kill_engine(self) -> str:
        from replication.engine import status as stream_status

        status = stream_status.engine_status()
        if status.pid is None:
            return "the engine was not running (nothing killed)"
        os.killpg(os.getpgid(status.pid), signal.SIGKILL)
        return f"the engine (pid {status.pid}) killed with kill -9; the supervisor restarts it"

    def kill_worker(self) -> str:
        from infra import processes

        processes.stop(self.stack.pidfile("worker"), sig=signal.SIGKILL)
        self.stack.up(["worker"], echo=lambda _: None)
        return "the Celery worker killed with kill -9, started again"

    def restart_redis(self) -> str:
        self.stack.down(["redis"], echo=lambda _: None)
        self.stack.up(["redis"], echo=lambda _: None)
        return "Redis restarted"

    def pause_link(self) -> str:
        from replication.models import ClusterLink
        from replication.topics.links import pause_link, resume_link

        link = self.random.choice(list(ClusterLink.objects.filter(name__startswith="soak-")))
        pause_link(self.actor, link)
        time.sleep(20)
        resume_link(self.actor, ClusterLink.objects.get(pk=link.pk))
        return f"link {link.name} paused for 20 s, then resumed"

    FAULTS = (
        "restart_broker",
        "kill_broker",
        "kill_engine",
        "kill_worker",
        "restart_redis",
        "pause_link",
    )

    # --- the run ------------------------------------------------------------------------------

    def worst_lag(self, mirrors) -> int | None:
        from replication.observe import lag

        largest = []
        for m in mirrors:
            reading = lag.latest_of(m)
            if reading is None or (found := reading.largest) is None:
                return None
            largest.append(found[0])
        return max(largest)

    def run(self) -> dict:
        mirrors = self.set_up()
        producers = Producers([m.source_topic for m in mirrors], self.args.rate)
        started = time.monotonic()
        producers.start()
        deadline = started + self.args.minutes * 60
        order = list(self.FAULTS)
        self.random.shuffle(order)  # each kind at least once, when there is time for them
        next_fault = started + self.random.uniform(20, self.args.fault_every)
        while time.monotonic() < deadline:
            now = time.monotonic()
            worst = self.worst_lag(mirrors)
            if worst is not None:
                self.lags.append((round(now - started), worst))
            if now >= next_fault and now < deadline - 60:
                kind = order.pop(0) if order else self.random.choice(self.FAULTS)
                at = round(now - started)
                log(f"Fault at {at} s: {kind}")
                try:
                    said = getattr(self, kind)()
                except Exception as exc:  # noqa: BLE001 - a fault that could not be injected is reported
                    said = f"could not inject: {exc}"
                self.faults.append({"at_s": at, "kind": kind, "what": said})
                log(f"  {said}")
                next_fault = time.monotonic() + self.random.expovariate(1 / self.args.fault_every)
                next_fault = max(next_fault, time.monotonic() + 20)
            time.sleep(5)
        producers.done.set()
        producers.join()
        log(f"Producers stopped: {producers.written:,} records written")
        caught_up_s = self.catch_up(mirrors)
        return self.verify(mirrors, producers, caught_up_s, time.monotonic() - started)

    def recoveries(self) -> list[dict]:
        """Each fault with the worst lag read until the next one, and how long after it the
        worst lag was back under a second of a topic's records."""
        ends = [f["at_s"] for f in self.faults[1:]] + [float("inf")]
        for fault, end in zip(self.faults, ends, strict=True):
            window = [(t, worst) for t, worst in self.lags if fault["at_s"] <= t < end]
            peak_at, peak = max(window, key=lambda r: r[1], default=(fault["at_s"], 0))
            second = self.args.rate / self.args.links
            back = next((t for t, w in window if t >= peak_at and w < second), None)
            fault["worst_lag"] = peak
            fault["back_s"] = None if back is None else back - fault["at_s"]
        return self.faults

    def catch_up(self, mirrors) -> float:
        from replication.observe import lag

        started = time.monotonic()
        while time.monotonic() - started < 900:
            statuses = lag.describe_mirrors(mirrors)
            if all(not s.errors and s.partitions and s.max_lag == 0 for s in statuses):
                return round(time.monotonic() - started, 1)
            time.sleep(2)
        raise RuntimeError("the mirrors did not catch up within 15 minutes of the end")

    def verify(self, mirrors, producers, caught_up_s: float, seconds: float) -> dict:
        from replication.models import MirrorTopic, Verification
        from replication.observe import verification_requests, verification_sweep

        outcome = []
        for mirror in mirrors:
            mirror = MirrorTopic.objects.get(pk=mirror.pk)
            found = verification_requests.start(self.actor, mirror)
            verification_requests.run(found.pk)
            found = Verification.objects.get(pk=found.pk)
            mirror.refresh_from_db()
            checked = verification_sweep.verified(mirror)
            outcome.append(
                {
                    "mirror": mirror.mirror_topic,
                    "link": mirror.link.name,
                    "records": found.total,
                    "verification": found.state,
                    "identical": found.identical,
                    "outcome": verification_requests.outcome(found),
                    "differing_records": mirror.differing_records,
                    "records_lost": mirror.records_lost,
                    "background_checked": sum(to - first for first, to in checked.values()),
                }
            )
            log(f"{mirror.mirror_topic}: {verification_requests.outcome(found)}")
        return {
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            **machine(),
            "minutes": self.args.minutes,
            "rate": self.args.rate,
            "links": self.args.links,
            "seconds": round(seconds),
            "written": producers.written,
            "producer_failures": len(producers.failed),
            "producer_errors": dict(Counter(producers.failed).most_common(5)),
            "faults": self.recoveries(),
            "worst_lag": max((w for _, w in self.lags), default=None),
            "lag_readings": len(self.lags),
            "caught_up_s": caught_up_s,
            "mirrors": outcome,
            "clean": all(
                m["verification"] == "IDENTICAL"
                and not m["differing_records"]
                and not m["records_lost"]
                for m in outcome
            ),
        }


def section(r: dict) -> str:
    faults = "\n".join(
        f"| {f['at_s']} | {f['kind'].replace('_', ' ')} | {f['what']} | {f['worst_lag']:,} | "
        f"{'–' if f['back_s'] is None else f['back_s']} |"
        for f in r["faults"]
    )
    mirrors = "\n".join(
        f"| {m['link']} | `{m['mirror']}` | {m['records']:,} | {m['verification']} | "
        f"{m['differing_records']} | {sum(e - s for s, e in m['records_lost'].values())} | "
        f"{m['background_checked']:,} |"
        for m in r["mirrors"]
    )
    caught_up = (
        "every mirror had caught up already"
        if r["caught_up_s"] < 1
        else f"every mirror had caught up {r['caught_up_s']} s later"
    )
    verdict = (
        "**Clean**: every mirror identical to its source, record by record, nothing lost."
        if r["clean"]
        else "**Not clean**: see the table."
    )
    return f"""## Soak: {r["minutes"]} minutes of faults

`make soak` ({r["when"]}, {r["CPU"]}, {r["RAM"]}): three-broker clusters (replication
factor 3, min.insync.replicas 2), the whole stack (worker, beat, verifier, console), {r["links"]}
links each mirroring a topic of {PARTITIONS} partitions; {r["rate"]:,} records a second handed to
idempotent producers for {r["minutes"]} minutes ({r["written"]:,} records,
{r["producer_failures"]:,} of them not delivered), with a fault at random about every minute.
The worst mirror lag read (every 5 s, {r["lag_readings"]} readings) was {r["worst_lag"]:,}
records; when the producers stopped, {caught_up}.

| at (s) | fault | what | worst lag until the next | lag under 1 s of a topic's records after (s) |
| ---: | --- | --- | ---: | ---: |
{faults}

Then each mirror verified: every record it holds compared with its source (partition, offset,
key, value, headers, timestamp), and what the background verification found.

| link | mirror | records | verification | differing | lost | background-checked |
| --- | --- | ---: | --- | ---: | ---: | ---: |
{mirrors}

{verdict} The background verification compares up to 2,000 records per partition every 30 s,
so at {r["rate"]:,} records a second it covers a share of them during the soak; the
verification at the end covers all.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--links", type=int, default=3)
    parser.add_argument("--fault-every", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    _fresh()
    _django()
    soak = Soak(args)
    try:
        results = soak.run()
    finally:
        if not args.keep:
            from replication.engine import supervise

            supervise.stop_engine()
            soak.stack.down(echo=log)
    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    if not args.no_doc:
        sections.SOAK.write(section(results))
    return 0 if results["clean"] else 1


if __name__ == "__main__":
    sys.exit(main())
