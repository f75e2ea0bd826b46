"""docs/benchmarks.md, written from one run's results."""

from __future__ import annotations

import os
import textwrap
from typing import Any

from . import perf, report
from .catchup import SETTLE_SECONDS, CopyResult
from .latency import DIRECT
from .perf import Limit
from .report import ISTHMUS, MM2, Results, mib

# The old engine (Spark Structured Streaming: Spark's Kafka source, micro-batches, Arrow into a
# Python writer), from docs/benchmarks.md as `make bench` wrote it on 2026-11-22 20:30 UTC at
# commit d95afc0, on this machine: 1 GiB / 8 partitions / 1 KiB records, one producer-perf-test
# as the raw limit, latency at 2,000 records/s. Its CPU was sampled every 0.5 s per process
# (last seen), its memory is summed PSS. Kept here so that every generated document has it.
BEFORE: dict[str, Any] = {
    "run": "2026-11-22 20:30 UTC, commit d95afc0",
    "rows": [
        # engine, records/s, CPU s in copy time (1.00 GiB), p50 ms, p99 ms, start->first s, PSS MiB
        ("MirrorMaker 2", 59_617, 21, 15, 145, 6, 763),
        ("Isthmus, Structured Streaming engine", 24_479, 62, 731, 2_523, 27, 1_344),
    ],
    "producer_limit": 99_681,  # one producer-perf-test on the destination
    "consumer_limit": 280_668,  # one consumer-perf-test on the source
    "direct": (1, 6),  # p50, p99 ms at 2,000 records/s
}


# The v2 engine (a Spark application per link), from issue 26 as measured on this machine on a
# fresh `make bench` and a fresh `make demo`: what one link cost, kept so every generated
# document has it beside the engine that replaced it.
BEFORE_PER_LINK = [
    ("Cold start, mirror creation → first record", "11.3 s (MirrorMaker 2: 3.4 s)"),
    ("Idle link", "2.48 % of one core"),
    ("Memory, four idle links of one small mirror each", "2,106 MiB, 26 processes"),
    ("Memory per link", "527 MiB (a driver JVM and its Python processes)"),
    ("A link's first mirror → copying", "21–36 s (Spark started for it)"),
    ("Resume of a link's only mirror → copying again", "about 40 s"),
    ("Catch-up against MirrorMaker 2, raw limit", "2.90× and 0.96× (another run: 2.13×, 0.54×)"),
    ("64 topics × 4 partitions against MirrorMaker 2", "1.40× (another run: 1.76×)"),
]


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
    """'2.5× as fast as' / '3.1× slower than' from a ratio where above 1 is better."""
    if ratio >= 1:
        return f"{ratio:.2f}× as fast as"
    return f"{1 / ratio:.1f}× slower than"


def before_table() -> str:
    rows = [
        [
            name,
            f"{rate:,}",
            f"{cpu:,}",
            f"{p50:,} ms / {p99:,} ms",
            f"{first} s",
            f"{pss:,} MiB",
        ]
        for name, rate, cpu, p50, p99, first, pss in BEFORE["rows"]
    ]
    rows.append(
        [
            "raw limit: 1 producer-perf-test on the destination",
            f"{BEFORE['producer_limit']:,}",
            "–",
            f"direct: {BEFORE['direct'][0]} ms / {BEFORE['direct'][1]} ms",
            "–",
            "–",
        ]
    )
    header = [
        "",
        "catch-up records/s",
        "CPU s per GiB",
        "p50 / p99 at 2,000 records/s",
        "process start → first record",
        "peak memory (PSS)",
    ]
    return report.table(header, rows)


def _bound(r: Results) -> str:
    """What bounds the raw limit, from what the machine did while the producers ran."""
    p, c = r.producer_limit(), r.consumer_limit
    brokers = (
        "unknown" if p.broker_cpu_seconds is None else f"{p.broker_cpu_seconds / p.seconds:.2f}"
    )
    cores = os.cpu_count() or 1
    rest = p.machine_busy * cores - p.client_cpu_seconds / p.seconds
    if p.broker_cpu_seconds is not None:
        rest -= p.broker_cpu_seconds / p.seconds
    each = "; ".join(
        f"{x.clients} {x.tool}s {x.records_per_sec():,.0f} records/s together "
        f"({', '.join(f'{y:,.0f}' for y in x.client_rates)} as each reported, from its own start)"
        for x in r.producer_limits
    )
    reading = (
        ": reading is not the bound"
        if c.records_per_sec() >= p.records_per_sec()
        else ": here reading, as far as the Java consumer tool goes, is the lower of the two, "
        "and so the limit"
    )
    return (
        f"Writing to the destination: {each}. While the {p.tool}s wrote, the CPUs were "
        f"{p.machine_busy:.0%} busy: both brokers used {brokers} of a core, the producers "
        f"{p.client_cpu_seconds / p.seconds:.2f}, everything else (the kernel, the bench, any "
        f"other process) {max(rest, 0):.2f}. {_verdict(r, p, cores)} {c.clients} "
        f"consumer-perf-tests read the source at {c.records_per_sec():,.0f} records/s together, "
        f"{c.records_per_sec() / p.records_per_sec():.1f}× the producers' rate{reading}."
    )


def _verdict(r: Results, p: Limit, cores: int) -> str:
    faster = [c.engine for c in r.copies if c.records_per_sec() > r.limit_records_per_sec()]
    if faster:
        return (
            f"{' and '.join(faster)} copied faster than this, so it is no ceiling: the brokers "
            "and the machine sustained more, and the producers' own cost bound it."
        )
    if p.machine_busy >= 0.9:
        return (
            f"It is bound by the CPU of this {cores}-core machine, shared by the brokers and "
            "the clients: more producers would only share it."
        )
    return (
        "The machine had CPU to spare, so it is not CPU alone: the destination broker appends "
        "and acknowledges each batch (`acks=all`) and the producers wait for it."
    )


def _spare(c: CopyResult) -> str:
    """A copy that left CPU unused was bound by something else."""
    if c.machine_busy >= 0.9:
        return ""
    return (
        f" {c.engine} left {1 - c.machine_busy:.0%} of the machine's CPU unused during the copy, "
        "so CPU did not bound its throughput: its tasks also waited (on fetches from the source, "
        "acknowledgements from the destination, or their own pacing)."
    )


def _cpu_gap(r: Results, engine: str) -> str:
    """The largest relative gap between the two counts of the engine's whole-run CPU."""
    gaps = [
        abs(x.run_cpu_sampled - x.run_cpu_rusage) / x.run_cpu_sampled
        for x in [*r.copies, *r.many]
        if x.engine == engine and x.run_cpu_sampled
    ]
    return f"{max(gaps, default=0):.1%}"


def _idle_brokers(c: CopyResult) -> str:
    return "–" if c.idle is None else report.share(c.idle.broker_cpu_seconds, c.idle.seconds)


def _discussion(r: Results) -> str:
    i, m = r.copy(ISTHMUS), r.copy(MM2)
    mi, mm = r.many_copy(ISTHMUS), r.many_copy(MM2)
    limit = r.limit_records_per_sec()
    latency = " ".join(
        f"At {rate:,} records/s: direct p50 {r.window(DIRECT, rate).p50_ms:,.0f} ms / p99 "
        f"{r.window(DIRECT, rate).p99_ms:,.0f} ms, MirrorMaker 2 "
        f"{r.window(MM2, rate).p50_ms:,.0f} / {r.window(MM2, rate).p99_ms:,.0f} ms, Isthmus "
        f"{r.window(ISTHMUS, rate).p50_ms:,.0f} / {r.window(ISTHMUS, rate).p99_ms:,.0f} ms; "
        f"the engines used {report.share(r.window(MM2, rate).cpu_seconds, r.latency_measure)} "
        f"(MM2) and {report.share(r.window(ISTHMUS, rate).cpu_seconds, r.latency_measure)} "
        "(Isthmus) of one core."
        for rate in r.rates
    )
    idle_i = f"{i.idle.core_share():.2%}" if i.idle else "not measured"
    idle_m = f"{m.idle.core_share():.2%}" if m.idle else "not measured"
    added = (
        f"{i.add.total_seconds():.2f} s ({i.add.create_seconds:.2f} s to make its topic, "
        f"{i.add.first_record_seconds:.2f} s from the new mirror set to its first record)"
        if i.add and i.add.first_record_seconds is not None
        else "nothing within 60 s"
    )
    python = i.python_cpu_seconds / i.cpu_seconds if i.cpu_seconds else 0.0
    peak_i, peak_m = r.peak(ISTHMUS), r.peak(MM2)
    return f"""\
**Catch-up.** Isthmus copied the topic {_times(i.records_per_sec() / m.records_per_sec())}
MirrorMaker 2, at {i.records_per_sec() / limit:.0%} of the raw limit (MM2:
{m.records_per_sec() / limit:.0%}). Both brokers and the engine share the two cores; during the
copy the machine's CPUs were {i.machine_busy:.0%} busy with Isthmus and {m.machine_busy:.0%} with
MM2. Isthmus used {i.cpu_per_gib():.1f} CPU seconds per GiB copied, MM2 {m.cpu_per_gib():.1f};
the two brokers used {report.per_gib(i.broker_cpu_seconds, i.bytes)} and
{report.per_gib(m.broker_cpu_seconds, m.bytes)} per GiB while each copied. On a machine this
size, CPU the engine does not use is CPU the brokers get.{_spare(i)} {python:.0%} of Isthmus's
CPU in the copy was in Python processes (the copier tasks, a confluent-kafka consumer and
producer each, and the driver's Python side), the rest in the Spark driver's JVM.

**The raw limit.** {_bound(r)}

**Many partitions.** With {r.many_topics} mirror topics of {r.many_partitions} partitions
({mi.records:,} records) on one link, Isthmus copied
{_times(mi.records_per_sec() / mm.records_per_sec())} MM2 ({mi.records_per_sec():,.0f} against
{mm.records_per_sec():,.0f} records/s), using {mi.cpu_per_gib():.1f} and {mm.cpu_per_gib():.1f}
CPU seconds per GiB. From their creation to the first record copied:
{mi.cold_start_seconds():.1f} s (Isthmus) and {mm.cold_start_seconds():.1f} s (MM2).

**Latency.** "Direct" is the floor of the method: from the source broker's append to our
consumer reading the source topic itself, no copy. {latency}

**Idle.** With its mirrors receiving nothing for {r.idle_seconds:.0f} s after the copy,
Isthmus's processes used {idle_i} of one core, MM2's {idle_m}. Meanwhile both brokers used
{_idle_brokers(i)} of one core with Isthmus and {_idle_brokers(m)} with MM2 (the engines' idle
fetches and the brokers' own housekeeping).

**Startup and a new mirror.** From the mirror's creation (its topic made on the destination,
then the engine started with it) to its first record on the destination: Isthmus
{i.cold_start_seconds():.1f} s, MM2 {m.cold_start_seconds():.1f} s. Isthmus's includes Spark's
start and, by design, a wait between claiming each slot's first epoch and letting it write
(`docs/mirror-engine.md`, "No zombie writes"), overlapped with Spark's start. The engine starts
once per deployment and is kept: a later link finds it warm (see "Links in one engine"). A
mirror added to the running engine (its topic made, then the mirror set published with a higher
generation; the engine keeps running and copying its other mirror) had its first record on
the destination after {added}. MM2 would take a new topic only at its next topic refresh
(`refresh.topics.interval.seconds`, 10 minutes by default) or a restart, so that is not timed.

**Memory.** Summed RSS over the engine's processes peaked at {mib(peak_i.rss)} for Isthmus and
{mib(peak_m.rss)} for MM2 over the whole run (summed PSS, which splits shared pages among their
processes: {mib(peak_i.pss)}, of it {mib(peak_i.python_pss)} in Python processes, and
{mib(peak_m.pss)}). Isthmus is a Spark driver JVM (a heap of {r.settings[ISTHMUS]["driver memory"]}
at most, started small: `{r.settings[ISTHMUS].get("driver JVM options", "")}`) plus its Python
processes; MM2 is one JVM with a heap of up to 2 GiB, as Kafka's own script sets it.

**CPU accounting.** Over each whole engine run (start to exit), the table above gives the CPU
summed from /proc samples and getrusage of the bench's reaped children. getrusage counts only
processes whose parents reap them all the way up to the bench: for MM2, one JVM, the two agree
(within {_cpu_gap(r, MM2)}); for Isthmus getrusage is lower by {_cpu_gap(r, ISTHMUS)}, because
when the Spark JVM exits its Python daemon and the daemon's workers (the copier tasks) are
orphaned and reaped by init, so their time never reaches the bench. The samples count them,
and miss only what the processes use after the last sample before they exit (at most one
0.25 s interval of the tree). The measured windows (the copy, the idle window, each latency
window) fall while the engine's processes live.

**What bounds the targets missed.** *Catch-up*: the copy is bound by this machine's CPU. The
machine was {i.machine_busy:.0%} busy while Isthmus copied, the brokers taking
{report.per_gib(i.broker_cpu_seconds, i.bytes)} CPU seconds per GiB of it; sampled with py-spy
during a catch-up, a copier thread spends about 85% of its time inside confluent-kafka's
`produce` and `consume` calls (librdkafka copying each record in and out) and about 15% in the
copier's own Python. A faster copy here needs fewer cycles per record in the client library,
not less Python; the ratio to MirrorMaker 2 also moves a lot between runs (1.65× to 2.5× on
2026-11-29), as MM2's own records/s do. Runs before 2026-11-29 timed a copy from the first look
that saw a record, with a new admin client per look: a look that failed hid the copy's first
seconds and flattered it (once a raw limit of 5.2 million records/s). Timed as now, the engine
of 2026-11-28 before its copiers shared consumers (commit 01740bd) copied 280,000-294,000
records/s in 4.5 CPU s per GiB, and today's 259,000-300,000 in 4.5-5.2: a copier alone on its
source's consumer reads it in its own thread, as it did then (handing records from a reader
thread to the copier's had cost 10-20%).
*Idle*: three runs on 2026-11-29 measured 1.07-1.72% of a core, and the engine of 2026-11-28
before its copiers shared consumers 1.55-1.85% (20 s windows) on the same machine; the run of
2026-11-24 on Intel Xeon cores measured 0.90%. Per thread over 30 s of idle, Spark's JVM used
0.07% of a core; the rest is the driver's and the two slots' Python, each about 0.2%.
*Many partitions*: the copy of 1 MiB per partition lasts a few seconds, so how it starts
weighs: each slot's copier reads where each of its mirror partitions ends, then starts them
together, and a slot that starts late (once seen: 3 s, not reproduced in two runs outside
the bench) leaves the other to copy alone meanwhile. *p99 latency*: a whole millisecond is
the step of the measure, and the runs so far put Isthmus's p99 at 20,000 records/s at 7 or
8 ms against MirrorMaker 2's 9 to 12. *Cold start*: Spark's JVM and context
take about 3.5 s here from `spark-submit` to a running context, more than MirrorMaker 2's
whole cold start, before a copier slot's Python worker starts (about 1 s more). The engine
starts once per deployment and is kept: only the first link of a new deployment pays it; a
later link's first record lands in well under a second (see "Links in one engine").

**Caveats.** One run on one small machine, with both clusters, the engine and the load
generator on the same two cores: absolute numbers are low and the ratios would differ on a
cluster with dedicated brokers. Records are {r.record_size} B of uncompressed values with null
keys and no headers; keyed, compressed or header-heavy data would shift the per-record costs.
Latency depends on how busy the machine is. Each number comes from a single run; rerun
`make bench` for another sample."""


def _targets(r: Results) -> str:
    lines = [f"- {t.line()}" for t in report.targets(r)]
    met = sum(bool(t.met()) for t in report.targets(r))
    return f"{met} of {len(lines)} targets met.\n\n" + "\n".join(lines)


def document(r: Results) -> str:
    return _reflow(_document(r))


def _document(r: Results) -> str:
    gib = r.records * r.record_size / 2**30
    rates = " and ".join(f"{x:,}" for x in r.rates)
    many_mib = r.many[0].bytes / 2**20
    perf_props = " ".join(perf.PRODUCER_PROPS)
    return f"""\
# Benchmarks

Written by `make bench` (`python -m bench.run`) from the run of {r.started}; total wall time
{r.wall_seconds / 60:.1f} min. Load average (1, 5, 15 min) before the run:
{", ".join(f"{x:.2f}" for x in r.load_before)}. {r.quietness()} {r.note}

The Isthmus engine running one link (`spark_jobs/`, one Spark application of long-running copier
slots, started by `spark-submit` exactly as the console starts it) is compared with Apache Kafka's
MirrorMaker 2 and with the raw client limit, on the dev stack's two single-broker clusters
(source `127.0.0.1:9092`, destination `127.0.0.1:9093`, PLAINTEXT), in the same run.

## Targets

{_targets(r)}

## Machine

{_rows(report.machine())}

## Versions

{_rows(report.versions(r))}

## Method

- **Data.** One source topic, `bench.catchup`, {r.partitions} partitions, preloaded by
  {r.preload.clients} `kafka-producer-perf-test`s at once with {r.records:,} records of
  {r.record_size} B ({gib:.2f} GiB of values, null keys, no compression; producer
  `{perf_props}`), at {r.preload.records_per_sec():,.0f} records/s.
- **Raw client limit.** As many clients at once as the copy has tasks ({r.clients}):
  {r.clients} `kafka-producer-perf-test`s write {r.records:,} records of the same size between
  them to a topic of {r.partitions} partitions on the destination (same producer settings), then
  {r.clients} processes of confluent-kafka producers (`bench/rdproduce.py`: librdkafka, the
  copier's client, with the same batching, idempotent as the Java producer is by default) do the
  same; each timed like a copy. The
  faster of the two is the write limit. {r.clients} `kafka-consumer-perf-test`s, each in its own
  group, read the whole source topic (their `fetch.*` rates, which leave out the group join,
  summed). A copy reads and writes each record, so the limit is the slower of reading and
  writing. While the producers run, the machine's busy share and the brokers' and producers' CPU
  say what bounds it.
- **Catch-up.** Each engine copies the preloaded topic into its own destination topic: MM2 to
  `bench.catchup` (IdentityReplicationPolicy keeps the name), Isthmus to the mirror topic
  `bench.catchup.isthmus`; one preload serves both. MM2 runs first, then Isthmus, never together.
  The destination topics are made beforehand with the same partition count. The copy is done when
  every destination partition's end offset equals the source's, read with the Admin API every
  0.1 s. *Copy time* runs from the last look that saw no record copied to the answer of the
  look that saw the last (a slow or failed look can make a copy look slower, never faster);
  throughput is records (and value bytes, MiB = 2^20 B) over the copy time, and *CPU s per GiB*
  the engine's CPU seconds in the copy time over the GiB copied.
- **Many partitions.** {r.many_topics} source topics × {r.many_partitions} partitions, holding
  {many_mib:,.0f} MiB in all (written by one confluent-kafka producer), copied by one engine run:
  one Isthmus link with {r.many_topics} mirrors, one MM2 flow whose topic list names them all;
  measured as the catch-up.
- **Idle.** After the catch-up, each engine keeps running with nothing new to copy; after
  {SETTLE_SECONDS:.0f} s for the copy's tail, its CPU over {r.idle_seconds:.0f} s is its idle cost
  (the bench makes no request meanwhile).
- **Startup and a new mirror.** *Cold start*: from the mirror's creation (its destination topic
  made, then the engine started with it) to its first record on the destination, in the catch-up
  (a preloaded source). *Mirror added*: after the idle window, a mirror of `bench.added` (a topic
  of {r.add_records:,} records) is added to the running Isthmus engine as the console adds
  one: its topic made on the destination, then the mirror set published in Redis with a higher
  generation; timed to its first record on the destination (end offsets read every 0.05 s).
- **Latency.** Per engine, one run serves every rate ({rates} records/s), one after the other: a
  Python producer (confluent-kafka, `acks=all`, the client's default `linger.ms=5`) sends records
  of {r.record_size} B to a fresh {r.partitions}-partition source topic; once the first record is
  copied, each rate gets {r.latency_warmup:.0f} s of warmup, then {r.latency_measure:.0f} s
  measured. The source topic stamps each record with the time its broker appended it
  (`message.timestamp.type=LogAppendTime`) and both engines copy that timestamp, so a record's
  latency is the wall time at which a confluent-kafka consumer on the destination receives it
  minus the moment it could first be read on the source: the producer's batching stays out of
  it. Brokers and consumer share one clock. A byte in each value tells the windows apart. The
  "direct" rows read the source topic itself, with no copy: the floor of the method. (The
  previous method timed from the producer's send with `linger.ms=0`; at 20,000 records/s that
  producer's stream of tiny requests raised even the direct floor to 100-500 ms here.)
- **CPU.** Every process of the engine's tree (the started process, its descendants, and
  anything left in its process group) is read from `/proc/<pid>/stat` every 0.25 s and at each
  measured moment: utime + stime + cutime + cstime. A child that exits is reaped by its parent
  (Spark's Python daemon reaps its workers, the JVM the Python driver), and the kernel then adds
  its whole time to the parent's cutime/cstime, so no exited child is lost however briefly it
  lived; a process reaped by no member of the tree (an orphan, reaped by init) counts with its
  last-seen time. The difference between two moments is the engine's CPU between them. As a
  check, the sum over each whole engine run is compared with `getrusage(RUSAGE_CHILDREN)` of the
  bench after the engine exited and was reaped (which cannot see orphans; see the discussion).
- **Memory.** Every 0.25 s, the RSS of each process of the tree (from `/proc/<pid>/stat`) and
  its PSS (from `/proc/<pid>/smaps_rollup`) are summed; the peak of each sum over the engine's
  run is kept. RSS counts a page shared by several processes once in each (the targets use it);
  PSS splits it among them.
- Every bench topic, MM2's internal topics and the link's Redis keys are removed at the end.

## Settings

**Isthmus** (the engine's defaults; one link):

{_rows(r.settings[ISTHMUS])}

**MirrorMaker 2** (dedicated mode, `org.apache.kafka.connect.mirror.MirrorMaker`), its
`mm2.properties` (`source->destination.topics` names the copied topics); heap
`{r.settings[MM2]["heap (KAFKA_HEAP_OPTS)"]}`:

{_code({k: v for k, v in r.settings[MM2].items() if not k.startswith("heap")})}

`tasks.max={r.settings[MM2]["tasks.max"]}` gives MM2 one task per core, as `local[*]` gives
Spark one task slot per core. Its producer keeps Connect's defaults otherwise: `acks=all`,
`max.in.flight.requests.per.connection=1`, not idempotent.

## Results

Catch-up copy of {r.records:,} records ({gib:.2f} GiB) over {r.partitions} partitions:

{report.throughput_table(r)}

{r.many_topics} topics × {r.many_partitions} partitions on one link ({r.many[0].records:,}
records, {many_mib:,.0f} MiB):

{report.many_table(r)}

Replication latency ({r.record_size} B records):

{report.latency_table(r)}

Idle link, after the catch-up:

{report.idle_table(r)}

Startup and adding a mirror:

{report.startup_table(r)}

Peak memory of the engine's processes, summed RSS (summed PSS):

{report.memory_table(r)}

Ratios:

{chr(10).join(f"- {line}" for line in report.ratio_lines(r))}

The engines' CPU over each whole run (start to exit), counted two ways:

{report.cpu_check_table(r)}

## Before: a Spark application per link

Until issue 26 each link had a Spark application of its own. What that cost, as measured here
on a fresh `make bench` and a fresh `make demo`:

{_rows(dict(BEFORE_PER_LINK))}

## Before that: the Structured Streaming engine

The previous engine (Spark's Kafka source, micro-batches, Arrow into a Python writer), as this
document reported it from the run of {BEFORE["run"]} on this machine (1 GiB / 8 partitions /
1 KiB records; one perf-test client as the raw limit; CPU then sampled per process every 0.5 s,
memory summed PSS; latency timed from the producer's send with `linger.ms=0`):

{before_table()}

Then Isthmus copied at {BEFORE["rows"][1][1] / BEFORE["rows"][0][1]:.2f}× MM2's records/s, with
{BEFORE["rows"][1][2] / BEFORE["rows"][0][2]:.1f}× its CPU per GiB.

## Discussion

{_discussion(r)}
"""
