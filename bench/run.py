"""`make bench`: the whole benchmark, in order, on the dev stack's two clusters.

1. preload the source topic (kafka-producer-perf-test);
2. raw client limit: consumer-perf-test over it on the source, producer-perf-test of as many
   records on the destination;
3. catch-up copy of the preloaded topic by MirrorMaker 2, then by Isthmus, one at a time
   (MM2 writes `bench.catchup`, Isthmus `bench.catchup.isthmus`: one preload serves both);
4. latency at a fixed rate: direct (the method's floor), MirrorMaker 2, Isthmus;
5. remove every bench topic, print the tables and write docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

from . import catchup, cluster, document, latency, perf, procs, report
from .isthmus import Isthmus
from .mm2 import MirrorMaker2

CATCHUP = f"{cluster.PREFIX}catchup"
LIMIT = f"{cluster.PREFIX}limit"
LATENCY = f"{cluster.PREFIX}latency"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="catch-up data, MiB")
    parser.add_argument("--record-size", type=int, default=1024, help="bytes per record")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rate", type=int, default=2000, help="latency test records/s")
    parser.add_argument("--warmup", type=float, default=15.0, help="latency warmup, s")
    parser.add_argument("--measure", type=float, default=45.0, help="latency window, s")
    parser.add_argument("--copy-timeout", type=float, default=420.0, help="per engine, s")
    parser.add_argument(
        "--doc",
        type=Path,
        default=cluster.ROOT / "docs" / "benchmarks.md",
        help="where to write the report (default docs/benchmarks.md)",
    )
    parser.add_argument("--no-doc", action="store_true", help="print only")
    parser.add_argument(
        "--note", default="", help="a sentence on the run's conditions, for the doc"
    )
    return parser.parse_args(argv)


def cleanup() -> None:
    for bootstrap in (cluster.SOURCE, cluster.DESTINATION):
        cluster.delete_topics(bootstrap, cluster.bench_topics(bootstrap))
    MirrorMaker2().clean()


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    load_before = os.getloadavg()
    started_at = time.strftime("%Y-%m-%d %H:%M %Z")
    began = time.monotonic()
    engine_version, engine_digest = report.engine_version(), report.engine_digest()
    cluster.ensure_stack()
    quiet = procs.Quietness(cluster.stack_pids(("source", "destination", "redis")))
    cluster.WORK.mkdir(parents=True, exist_ok=True)
    cleanup()  # what an interrupted earlier run left
    records = args.size_mb * 2**20 // args.record_size
    engines = [MirrorMaker2(), Isthmus()]
    group = f"bench-consumer-perf-{os.getpid()}"
    try:
        cluster.log(f"Preloading {records:,} records of {args.record_size} B into {CATCHUP}")
        cluster.create_topic(cluster.SOURCE, CATCHUP, args.partitions)
        preload = perf.produce(cluster.SOURCE, CATCHUP, records, args.record_size, "preload")
        spread = cluster.end_offsets(cluster.SOURCE, CATCHUP, args.partitions).values()
        cluster.log(f"Records per partition: {min(spread):,} to {max(spread):,}")

        consumer_limit = perf.consume(cluster.SOURCE, CATCHUP, records, group, "consumer-perf")
        cluster.create_topic(cluster.DESTINATION, LIMIT, args.partitions)
        producer_limit = perf.produce(
            cluster.DESTINATION, LIMIT, records, args.record_size, "producer-perf"
        )

        copies = [
            catchup.run(e, CATCHUP, args.partitions, args.record_size, args.copy_timeout)
            for e in engines
        ]
        latencies = [
            latency.run(
                engine,
                f"{LATENCY}-{tag}",
                args.partitions,
                args.record_size,
                args.rate,
                args.warmup,
                args.measure,
            )
            for engine, tag in ((None, "direct"), (engines[0], "mm2"), (engines[1], "isthmus"))
        ]
    finally:
        cluster.log("Removing the bench topics")
        for engine in engines:
            engine.stop()
        cleanup()
        cluster.delete_group(cluster.SOURCE, group)

    other_cpu, machine_cpu = quiet.other()
    if report.engine_digest() != engine_digest:
        engine_version += " (the stream's code changed during the run!)"
        cluster.log(f"Warning: {engine_version}")
    results = report.Results(
        started=started_at,
        wall_seconds=time.monotonic() - began,
        load_before=load_before,
        record_size=args.record_size,
        partitions=args.partitions,
        records=records,
        preload=preload,
        consumer_limit=consumer_limit,
        producer_limit=producer_limit,
        copies=copies,
        latencies=latencies,
        latency_rate=args.rate,
        latency_warmup=args.warmup,
        settings={e.name: e.settings() for e in engines},
        note=args.note,
        engine_version=engine_version,
        other_cpu=other_cpu,
        machine_cpu=machine_cpu,
    )
    report.print_summary(results)
    # The raw numbers too, to compare runs or check the document against them.
    raw = cluster.WORK / "results.json"
    raw.write_text(json.dumps(dataclasses.asdict(results), indent=2))
    if not args.no_doc:
        args.doc.parent.mkdir(parents=True, exist_ok=True)
        args.doc.write_text(document.document(results))
        cluster.log(f"Wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
