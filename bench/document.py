"""docs/benchmarks.md, written from one run's results."""

from __future__ import annotations

import os
import textwrap

from . import perf, report
from .latency import DIRECT
from .report import Results


def _rows(values: dict[str, str]) -> str:
    lines = ["| | |", "| --- | --- |"]
    lines += [f"| {k} | {v.replace('|', '&#124;')} |" for k, v in values.items()]
    return "\n".join(lines)


def _code(values: dict[str, str]) -> str:
    return "```properties\n" + "".join(f"{k}={v}\n" for k, v in values.items()) + "```"


def _reflow(markdown: str, width: int = 100) -> str:
    """Rewrap prose paragraphs and list items; tables, code and headings stay as they are."""
    blocks = []
    for block in markdown.strip().split("\n\n"):
        lines = block.split("\n")
        if any(line.startswith(("|", "```", "#")) for line in lines):
            blocks.append(block)
            continue
        items: list[list[str]] = [[]]
        for line in lines:
            if line.startswith("- ") and items[-1]:
                items.append([])
            items[-1].append(line.strip())
        blocks.append(
            "\n".join(
                textwrap.fill(
                    " ".join(item),
                    width,
                    subsequent_indent="  " if item[0].startswith("- ") else "",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
                for item in items
            )
        )
    return "\n\n".join(blocks) + "\n"


def _times(ratio: float) -> str:
    """'2.5× faster' / '3.1× slower' from a ratio where above 1 is better."""
    if ratio >= 1:
        return f"{ratio:.2f}× as fast as"
    return f"{1 / ratio:.1f}× slower than"


def _discussion(r: Results) -> str:
    isthmus, mm2 = r.copy("Isthmus"), r.copy("MirrorMaker 2")
    lat_i, lat_m = r.latency("Isthmus"), r.latency("MirrorMaker 2")
    direct = r.latency(DIRECT)
    gib = r.records * r.record_size / 2**30
    limit = r.limit_records_per_sec()
    n = isthmus.micro_batches
    backlog = "one micro-batch" if n == 1 else f"{n} micro-batches"
    if lat_i.micro_batches:
        every = lat_i.seconds / lat_i.micro_batches
        batches = (
            f"in the measured window it wrote {lat_i.micro_batches} batches in "
            f"{lat_i.seconds:.0f} s, one every {every:.2f} s (about "
            f"{lat_i.rate * every:,.0f} records each)"
        )
    else:
        batches = "its heartbeat reported no finished batch in the measured window"
    idle = ""
    if isthmus.machine_busy < 0.9:
        idle = (
            " Isthmus left part of the machine idle, so it is not bound by CPU alone; likely"
            " causes are waits inside each Spark task (a task hands records from its JVM side to"
            " its Python side in Arrow batches, and ends by waiting for the destination's"
            " acknowledgements)."
        )
    return f"""\
**Catch-up.** Isthmus copied the topic
{_times(isthmus.records_per_sec() / mm2.records_per_sec())} MirrorMaker 2, at
{isthmus.records_per_sec() / limit:.0%} of the raw client limit (MM2:
{mm2.records_per_sec() / limit:.0%}). It copied the backlog in {backlog}, at most
`maxOffsetsPerTrigger` records each. Both brokers and the engine share the two cores; during the
copy the machine's CPUs were {isthmus.machine_busy:.0%} busy with Isthmus and
{mm2.machine_busy:.0%} with MM2.{idle}

**Where the copy's CPU goes.** During the copy time Isthmus used
{isthmus.cpu_seconds / gib:.0f} CPU seconds per GiB, MM2 {mm2.cpu_seconds / gib:.0f}; the two
brokers used {isthmus.broker_cpu_seconds / gib:.0f} CPU seconds per GiB while Isthmus copied and
{mm2.broker_cpu_seconds / gib:.0f} while MM2 did. MM2 hands record batches from its consumer to
its producer inside one JVM. Isthmus moves every record from Spark's Kafka source (JVM) through
Arrow into a Python worker, where `spark_jobs/writer.py` produces it with confluent-kafka one
record at a time (`to_pydict()`, then a Python loop over the records).
{isthmus.python_cpu_seconds / isthmus.cpu_seconds:.0%} of Isthmus's CPU time was spent in
Python processes, the rest in Spark's JVM (Kafka source, conversion to Arrow, task scheduling).
Isthmus also writes with an idempotent producer and reads each destination partition's end
before writing; MM2 does neither (its Connect producer is not idempotent and keeps one request
in flight per connection).

**Startup.** From process start, Isthmus needed
{isthmus.total_seconds - isthmus.copy_seconds:.0f} s before its first record reached the
destination, MM2 {mm2.total_seconds - mm2.copy_seconds:.0f} s. For Isthmus that is the Spark
driver and the first micro-batch's Python workers; for MM2, the Connect worker joining its group
and starting the connector's tasks. It is paid at every (re)start of a link, not per record, so
the throughput above leaves it out; the "from process start" column includes it.

**Latency.** MM2 streams record by record: p50 {lat_m.p50_ms:,.0f} ms, p99
{lat_m.p99_ms:,.0f} ms. Isthmus works in micro-batches, back to back (trigger `0 seconds`):
{batches}. A record waits for the batch in progress to end and is copied by the next one, so its
latency is typically one to two batch durations: p50 {lat_i.p50_ms:,.0f} ms, p99
{lat_i.p99_ms:,.0f} ms. A batch has fixed costs whatever its size: planning, the offset and
commit logs written to the checkpoint, admin calls to both clusters (partition counts and
destination end offsets, before every batch), and scheduling the batch's Spark tasks on
{os.cpu_count()} cores. The floor of the method itself (our producer
straight to our consumer on the source, no copy) is p50 {direct.p50_ms:,.0f} ms, p99
{direct.p99_ms:,.0f} ms.

**Memory.** Peak memory (summed PSS) during catch-up was
{isthmus.peak_memory / 2**20:,.0f} MiB for Isthmus, {isthmus.peak_python / 2**20:,.0f} MiB of
it in Python processes (the PySpark driver, Spark's Python daemon and its workers) and the rest
in the Spark driver JVM ({r.settings["Isthmus"]["driver memory"]} heap); MM2 peaked at
{mm2.peak_memory / 2**20:,.0f} MiB (one JVM, heap up to 2 GiB, as Kafka's own script sets it).
At {r.latency_rate:,} records/s the peaks were {lat_i.peak_memory / 2**20:,.0f} MiB and
{lat_m.peak_memory / 2**20:,.0f} MiB.

**Caveats.** One run on one small machine, with both clusters, the engine and the load
generator on the same two cores: absolute numbers are low and the ratios would differ on a
cluster with dedicated brokers. The raw limits were measured one tool at a time, each with a
single client; they are a reference point rather than a hard ceiling (a copy reads and writes at
once, but MM2, for one, writes with two producers). Records are {r.record_size} B of
uncompressed values with null keys and no headers; keyed, compressed or header-heavy data would
shift the per-record costs. Latency in particular depends on how busy the machine is, as
Isthmus's fixed work per batch competes for the same cores. Each number comes from a single
run; rerun `make bench` for another sample."""


def document(r: Results) -> str:
    return _reflow(_document(r))


def _document(r: Results) -> str:
    latency_note = (
        f"{r.latency_rate:,} records/s of {r.record_size} B to a fresh {r.partitions}-partition "
        f"topic; {r.latency_warmup:.0f} s of warmup once the first record arrives, then "
        f"{r.latencies[0].seconds:.0f} s measured"
    )
    perf_props = " ".join(perf.PRODUCER_PROPS)
    return f"""\
# Benchmarks

Written by `make bench` (`python -m bench.run`) from the run of {r.started}; total wall time
{r.wall_seconds / 60:.1f} min. Load average (1, 5, 15 min) before the run:
{", ".join(f"{x:.2f}" for x in r.load_before)}. {r.quietness()} {r.note}

Isthmus's link stream (`spark_jobs/link_stream.py`, started by `spark-submit` exactly as the
console starts it) is compared with Apache Kafka's MirrorMaker 2 and with the raw client limit,
on the dev stack's two single-broker clusters (source `127.0.0.1:9092`, destination
`127.0.0.1:9093`, PLAINTEXT), in the same run.

## Machine

{_rows(report.machine())}

## Versions

{_rows(report.versions(r))}

## Method

- **Data.** One source topic, `bench.catchup`, {r.partitions} partitions, preloaded by
  `kafka-producer-perf-test` with {r.records:,} records of {r.record_size} B
  ({r.records * r.record_size / 2**30:.2f} GiB of values, null keys, no compression;
  producer `{perf_props}`). The preload ran at {r.preload.records_per_sec():,.0f} records/s.
- **Raw client limit.** `kafka-consumer-perf-test` reads the whole topic on the source (its
  `fetch.*` rate, which leaves out the group join), then `kafka-producer-perf-test` writes as many
  records of the same size to a topic of {r.partitions} partitions on the destination (same producer
  settings as the preload). A copy does both at once, so the limit is the slower of the two.
- **Catch-up.** Each engine copies the preloaded topic into its own destination topic: MM2 to
  `bench.catchup` (IdentityReplicationPolicy keeps the name), Isthmus to the mirror topic
  `bench.catchup.isthmus`; one preload serves both. MM2 runs first, then Isthmus, never together.
  Both destination topics are created beforehand with the same partition count. The copy is done
  when every destination partition's end offset equals the source's, read with the Admin API
  every 0.2 s. *Copy time* runs from the first record seen on the destination to the last;
  *from process start* adds the engine's startup. Throughput is records (and value bytes, MiB =
  2^20 B) over the copy time.
- **Latency.** Per engine, a Python producer (confluent-kafka, `linger.ms=0`, `acks=all`) sends
  {latency_note}. Each record's timestamp (CreateTime, set at send and kept by both engines) is
  compared with the wall time at which a confluent-kafka consumer on the destination receives it;
  producer, consumer and engine share one clock. The "direct" row reads the source topic itself,
  with no copy: the floor of the method.
- **Memory and CPU.** The engine's process tree (MM2: one JVM; Isthmus: the spark-submit JVM,
  the PySpark driver and Spark's Python workers) is sampled with psutil every 0.5 s: peak of the
  summed PSS (proportional set size, which splits a page shared by several processes among them;
  summed RSS would count the Python workers' shared pages, and the Spark JVM's short-lived forks
  for helper commands, once per process), and CPU time (user + system) of every process seen.
- Every bench topic, MM2's internal topics and the stream's Redis keys are removed at the end.

## Settings

**Isthmus** (the link stream's defaults; one stream, one mirror):

{_rows(r.settings["Isthmus"])}

**MirrorMaker 2** (dedicated mode, `org.apache.kafka.connect.mirror.MirrorMaker`), its
`mm2.properties` (`source->destination.topics` names the copied topic); heap
`{r.settings["MirrorMaker 2"]["heap (KAFKA_HEAP_OPTS)"]}`:

{_code({k: v for k, v in r.settings["MirrorMaker 2"].items() if not k.startswith("heap")})}

`tasks.max=2` gives MM2 one task per core, as `local[*]` gives Spark one task slot per core.
Its producer keeps Connect's defaults otherwise: `acks=all`,
`max.in.flight.requests.per.connection=1`, not idempotent.

## Results

Catch-up copy of {r.records:,} records ({r.records * r.record_size / 2**30:.2f} GiB) over
{r.partitions} partitions:

{report.throughput_table(r)}

Replication latency at {r.latency_rate:,} records/s ({r.record_size} B records):

{report.latency_table(r)}

Ratios:

{chr(10).join(f"- {line}" for line in report.ratio_lines(r))}

## Discussion

{_discussion(r)}
"""
