"""`make bench`: the whole benchmark, in order, on the dev stack's two clusters.

1. preload the source topic (as many kafka-producer-perf-tests at once as the copy has tasks);
2. raw client limit: as many consumer-perf-tests on the source, then producer-perf-tests and
   then confluent-kafka producers on the destination, at once;
3. catch-up copy of the preloaded topic by MirrorMaker 2, then by Isthmus, one at a time
   (MM2 writes `bench.catchup`, Isthmus `bench.catchup.isthmus`: one preload serves both);
   each engine then stays idle (its CPU measured), and Isthmus gets a mirror added while it
   runs (time to its first record);
4. many partitions: 64 topics × 4 partitions on one link, MM2 then Isthmus;
5. latency at each rate, one engine start for all rates: direct (the method's floor),
   MirrorMaker 2, Isthmus;
6. remove every bench topic, print the tables and write docs/benchmarks.md.

A quick try: `python -m bench.run --size-mb 50 --many-size-mb 16 --warmup 5 --measure 10
--idle 10 --no-doc`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import catchup, cluster, document, latency, perf, procs, report, sections
from .engine import Engine
from .isthmus import Isthmus
from .mm2 import MirrorMaker2

CATCHUP = f"{cluster.PREFIX}catchup"
LIMIT = f"{cluster.PREFIX}limit"
LATENCY = f"{cluster.PREFIX}latency"
ADDED = f"{cluster.PREFIX}added"  # the source of the mirror added to a running engine
MANY = f"{cluster.PREFIX}many"
ENGINES: dict[str, Callable[[int | None], Engine]] = {"mm2": MirrorMaker2, "isthmus": Isthmus}


def _rates(text: str) -> list[int]:
    rates = [int(x) for x in text.split(",") if x.strip()]
    if not 0 < len(rates) <= latency.MAX_RATES or min(rates) <= 0:
        raise argparse.ArgumentTypeError(f"1 to {latency.MAX_RATES} positive rates, e.g. 2000")
    return rates


def _engines(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or set(names) - set(ENGINES):
        raise argparse.ArgumentTypeError(f"a list of {', '.join(ENGINES)}")
    return [n for n in ENGINES if n in names]  # MM2 first, always


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--size-mb", type=int, default=1024, help="catch-up data, MiB (default 1024)")
    add("--record-size", type=int, default=1024, help="bytes per record (default 1024)")
    add("--partitions", type=int, default=8, help="of the catch-up topic (default 8)")
    add(
        "--tasks",
        type=int,
        default=None,
        help="copier tasks of Isthmus, MM2's tasks.max and the perf tools run at once "
        "(default: Isthmus's own default, one per core; the others the cores)",
    )
    add("--many-topics", type=int, default=64, help="mirror topics of the many case (64)")
    add("--many-partitions", type=int, default=4, help="partitions of each of them (4)")
    add("--many-size-mb", type=int, default=256, help="data of the many case, MiB (256)")
    add("--rates", type=_rates, default=[2000, 20000], help="latency records/s (2000,20000)")
    add("--warmup", type=float, default=10.0, help="latency warmup at each rate, s (10)")
    add("--measure", type=float, default=40.0, help="latency window at each rate, s (40)")
    add("--idle", type=float, default=60.0, help="idle window after the catch-up, s (60)")
    add("--add-records", type=int, default=1000, help="in the topic of the added mirror")
    add("--copy-timeout", type=float, default=420.0, help="per engine and copy, s (420)")
    add("--engines", type=_engines, default=list(ENGINES), help="mm2,isthmus (both)")
    add(
        "--doc",
        type=Path,
        default=cluster.ROOT / "docs" / "benchmarks.md",
        help="where to write the report (default docs/benchmarks.md)",
    )
    add("--no-doc", action="store_true", help="print only")
    add(
        "--from-results",
        type=Path,
        metavar="JSON",
        help="measure nothing: print and write the document from a run's saved results "
        "(var/bench/results.json)",
    )
    add(
        "--note",
        default="",
        help="a sentence on the run's conditions, for the doc (with --from-results, it replaces "
        "the run's own)",
    )
    return parser.parse_args(argv)


def cleanup() -> None:
    for bootstrap in (cluster.SOURCE, cluster.DESTINATION):
        cluster.delete_topics(bootstrap, cluster.bench_topics(bootstrap))
    MirrorMaker2().clean()


def limits(
    args: argparse.Namespace, records: int, clients: int, group: str
) -> tuple[perf.Limit, perf.Limit, list[perf.Limit]]:
    """Preload the catch-up topic, then measure the raw client limit on it and beside it."""
    cluster.log(f"Preloading {records:,} records of {args.record_size} B into {CATCHUP}")
    cluster.create_topic(cluster.SOURCE, CATCHUP, args.partitions)
    preload = perf.produce(
        perf.JAVA_PRODUCER,
        cluster.SOURCE,
        CATCHUP,
        args.partitions,
        records,
        args.record_size,
        clients,
    )
    spread = cluster.end_offsets(cluster.SOURCE, {CATCHUP: args.partitions}).values()
    cluster.log(f"Records per partition: {min(spread):,} to {max(spread):,}")
    consumer = perf.consume(cluster.SOURCE, CATCHUP, records, clients, group)
    producers = []
    for tool in (perf.JAVA_PRODUCER, perf.RD_PRODUCER):
        cluster.create_topic(cluster.DESTINATION, LIMIT, args.partitions)
        producers.append(
            perf.produce(
                tool,
                cluster.DESTINATION,
                LIMIT,
                args.partitions,
                records,
                args.record_size,
                clients,
            )
        )
    cluster.delete_topics(cluster.DESTINATION, [LIMIT])  # its GiB is of no further use
    return preload, consumer, producers


def _many(args: argparse.Namespace, engines: list[Engine]) -> list[catchup.CopyResult]:
    topics = [f"{MANY}.{i:02d}" for i in range(args.many_topics)]
    records = args.many_size_mb * 2**20 // args.record_size
    per_topic = max(1, records // len(topics))
    cluster.log(f"Preloading {per_topic * len(topics):,} records into {len(topics)} topics")
    cluster.create_topics(cluster.SOURCE, topics, args.many_partitions)
    took = cluster.fill(cluster.SOURCE, topics, per_topic, args.record_size)
    cluster.log(f"Preloaded in {took:.1f} s")
    return [
        catchup.run(e, "many", topics, args.many_partitions, args.record_size, args.copy_timeout)
        for e in engines
    ]


def publish(results: report.Results, args: argparse.Namespace) -> None:
    """Print the tables, and write the document unless told not to."""
    report.print_summary(results)
    if args.no_doc:
        return
    if not results.both():
        cluster.log("Not writing the document: it compares both engines (see --engines)")
        return
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    old = args.doc.read_text() if args.doc.exists() else ""
    args.doc.write_text(sections.keep_all(old, document.document(results)))
    cluster.log(f"Wrote {args.doc}")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.from_results:
        results = report.load(args.from_results)
        if args.note:  # a sentence on the run added afterwards, with what is known since
            results = dataclasses.replace(results, note=args.note)
        publish(results, args)
        return 0
    load_before = os.getloadavg()
    started_at = time.strftime("%Y-%m-%d %H:%M %Z")
    began = time.monotonic()
    engine_version, engine_digest = report.engine_version(), report.engine_digest()
    cluster.ensure_stack()
    quiet = procs.Quietness(cluster.stack_pids(("source", "destination", "redis")))
    cluster.WORK.mkdir(parents=True, exist_ok=True)
    cleanup()  # what an interrupted earlier run left
    records = args.size_mb * 2**20 // args.record_size
    clients = args.tasks or os.cpu_count() or 1
    engines: list[Engine] = [ENGINES[name](args.tasks) for name in args.engines]
    group = f"bench-consumer-perf-{os.getpid()}"
    try:
        preload, consumer_limit, producer_limits = limits(args, records, clients, group)
        if any(e.adds_mirrors_live for e in engines):
            cluster.create_topic(cluster.SOURCE, ADDED, args.partitions)
            cluster.fill(cluster.SOURCE, [ADDED], args.add_records, args.record_size)
        copies = [
            catchup.run(
                e,
                "catch-up",
                [CATCHUP],
                args.partitions,
                args.record_size,
                args.copy_timeout,
                idle=args.idle,
                add_source=ADDED,
            )
            for e in engines
        ]
        many = _many(args, engines)
        latencies = latency.run_all(
            [(None, "direct"), *((e, e.name.split()[0].lower()) for e in engines)],
            LATENCY,
            args.partitions,
            args.record_size,
            args.rates,
            args.warmup,
            args.measure,
        )
    finally:
        cluster.log("Removing the bench topics")
        for engine in engines:
            engine.stop()
        cleanup()
        for i in range(clients):
            cluster.delete_group(cluster.SOURCE, f"{group}-{i}")

    other_cpu, machine_cpu = quiet.other()
    if report.engine_digest() != engine_digest:
        engine_version += " (the engine's code changed during the run!)"
        cluster.log(f"Warning: {engine_version}")
    results = report.Results(
        started=started_at,
        wall_seconds=time.monotonic() - began,
        load_before=load_before,
        record_size=args.record_size,
        partitions=args.partitions,
        records=records,
        clients=clients,
        preload=preload,
        consumer_limit=consumer_limit,
        producer_limits=producer_limits,
        copies=copies,
        many_topics=args.many_topics,
        many_partitions=args.many_partitions,
        many=many,
        latencies=latencies,
        rates=args.rates,
        latency_warmup=args.warmup,
        latency_measure=args.measure,
        idle_seconds=args.idle,
        add_records=args.add_records,
        settings={e.name: e.settings() for e in engines},
        note=args.note,
        engine_version=engine_version,
        other_cpu=other_cpu,
        machine_cpu=machine_cpu,
    )
    # The raw numbers too, to compare runs or write the document again (--from-results).
    raw = cluster.WORK / "results.json"
    raw.write_text(json.dumps(dataclasses.asdict(results), indent=2))
    cluster.log(f"Wrote {raw}")
    publish(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
