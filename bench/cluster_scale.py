"""`python -m bench.cluster_scale`: a whole cluster mirrored by prefix, as a user moving a cluster
does it. For each case of `--cases` (topics x partitions; 200x10 and 1000x10: 2,000 and 10,000
partitions), those topics (`--records` records of 100 B in each partition) on the source, then

1. MirrorMaker 2 started with `topics=<prefix>.*` (it makes the destination topics itself),
   timed from its start until every partition is copied;
2. Isthmus: one link with `auto.create.mirror.topics.enable` and a PREFIXED filter, made with
   `link_creation.create_link` as the console makes it, its syncers and supervision run as the beat
   runs them (each in a thread of its own, as on the worker's two processes), on an engine
   already running (it starts with the worker), timed from the link's creation until every
   partition is copied; when its last mirror was made too.

Its own database (var/bench/cluster-scale.sqlite3), so it runs beside `make demo`. Writes
var/bench/cluster-scale.json and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from infra.kafka_errors import KafkaAdminError

from . import cluster, mm2, procs, sections
from .cluster import DESTINATION, ROOT, SOURCE, WORK, log
from .report import machine

RESULTS = WORK / "cluster-scale.json"
PREFIX = "bench.cs."
LINK = "bench-cluster-scale"
RECORD_SIZE = 100
TIMEOUT_S = 1800.0
TARGETS = {2_000: 0.5, 10_000: 1.0}  # of MM2's time, by partitions
IDLE_S = 30.0  # the engine measured idle this long, once it has copied
GROUP = f"{PREFIX}group"  # commits an offset on every source partition: the offset sync's work
PAGE_RUNS = 5  # each page asked this often, the median kept
PAGES_AT = 2_000  # partitions: the case whose pages, CLI and syncs are timed
IDLE_CPU, IDLE_RSS = 0.05, 1.5 * 2**30  # targets at 10,000 partitions
CONTROLLER_RECORDS = 10_000  # a KRaft controller's most metadata records for one request
LARGE = 5_000  # partitions: MM2's deleted topics' files are waited out before Isthmus makes as many
HEADER = (
    "| topics × partitions | MM2: started → all copied (s) | Isthmus: link → every mirror made "
    "(s) | Isthmus: link → all copied (s) | Isthmus against MM2 | engine idle, CPU | engine "
    "idle, memory |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def _names(topics: int) -> list[str]:
    return [f"{PREFIX}{i:04d}" for i in range(topics)]


def _source_ends(names: list[str], partitions: int) -> dict[tuple[str, int], int]:
    """Every partition's end, once each has a leader that says it (new ones: over seconds)."""
    admin = cluster.admin(SOURCE)
    wanted = [(n, p) for n in names for p in range(partitions)]
    found: dict[tuple[str, int], int] = {}

    def read() -> bool:
        found.update(admin.readable_offsets(wanted)[0])
        return len(found) == len(wanted)

    _until(read, "the source's ends")
    return found


def _copied(wanted: dict[tuple[str, int], int], rename: Callable[[str], str]) -> bool:
    """Whether every partition of the destination (its topics named by `rename`) holds what the
    source does."""
    try:
        found = cluster.admin(DESTINATION).offsets([(rename(t), p) for t, p in wanted])
    except KafkaAdminError:  # a topic not made yet: not copied
        return False
    return all(found[rename(t), p] >= end for (t, p), end in wanted.items())


def _until(check: Callable[[], bool], what: str, alive: Callable[[], bool] = lambda: True) -> float:
    began = time.monotonic()
    while not check():
        if not alive():
            raise RuntimeError(f"stopped while waiting for {what}")
        if time.monotonic() - began > TIMEOUT_S:
            raise RuntimeError(f"{what} not within {TIMEOUT_S:.0f} s")
        time.sleep(0.25)
    return time.monotonic() - began


def run_mm2(wanted: dict[tuple[str, int], int]) -> float:
    """MirrorMaker 2 with its default policy (mirrors named `source.<topic>`), which makes the
    destination topics itself; seconds from its start until every partition is copied. Where
    the controller would refuse its one request for all of them (a topic writes one metadata
    record, and one for each partition), it is given its topics made
    beforehand (not timed): it asks for all at once, is refused each time, and copies nothing."""
    properties = {k: v for k, v in mm2.SETTINGS.items() if k != "replication.policy.class"} | {
        "tasks.max": str(os.cpu_count() or 1),
        "source->destination.topics": re.escape(PREFIX) + ".*",
    }
    mirrored = sorted({f"source.{t}" for t, _ in wanted})
    cluster.delete_topics(DESTINATION, [*mirrored, *mm2.INTERNAL_DESTINATION])
    cluster.delete_topics(SOURCE, mm2.INTERNAL_SOURCE)
    each = len(wanted) // len(mirrored)
    if len(mirrored) * (1 + each) > CONTROLLER_RECORDS:
        cluster.create_topics(DESTINATION, mirrored, each)
    proc = mm2.launch(properties, "cluster-scale")
    try:
        return _until(
            lambda: _copied(wanted, lambda t: f"source.{t}"),
            "MirrorMaker 2's copy",
            lambda: proc.poll() is None,
        )
    finally:
        procs.stop_group(proc)
        cluster.delete_topics(DESTINATION, [*mirrored, *mm2.INTERNAL_DESTINATION, mm2.HEARTBEATS])
        cluster.delete_topics(SOURCE, mm2.INTERNAL_SOURCE)


def _link_configs() -> dict[str, str]:
    """Automatic mirrors by prefix; the group's offsets and the topics' ACLs synced."""

    def chosen(kind: str, entry: dict) -> str:
        return json.dumps({kind: [entry]})

    mine = {"name": PREFIX, "patternType": "PREFIXED", "filterType": "INCLUDE"}
    return {
        "auto.create.mirror.topics.enable": "true",
        "auto.create.mirror.topics.filters": chosen("topicFilters", mine),
        "consumer.offset.sync.enable": "true",
        "consumer.offset.group.filters": chosen("groupFilters", {**mine, "name": GROUP}),
        "acl.sync.enable": "true",
        "acl.filters": chosen(
            "aclFilters",
            {
                "resourceFilter": {
                    "resourceType": "topic",
                    "name": PREFIX,
                    "patternType": "prefixed",
                },
                "accessFilter": {"operation": "any", "permissionType": "any"},
            },
        ),
    }


def run_isthmus(wanted: dict[tuple[str, int], int], topics: int) -> dict:
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # a line for each of thousands of mirrors
    cluster.django_on_own_database("cluster-scale.sqlite3")
    from django.db import close_old_connections
    from django.utils import timezone

    from replication.core import read_only, redis_channel
    from replication.engine import process, status, supervise
    from replication.governance import audit
    from replication.kafka.connections import cluster_admin
    from replication.models import ClusterLink
    from replication.sync import syncers
    from replication.topics.link_creation import create_link
    from spark_jobs import control

    system = audit.Actor.system("bench")
    clusters = cluster.register_clusters(system)
    names = sorted({t for t, _ in wanted})
    stop = threading.Event()
    failures: list[str] = []

    def beat(work: Callable[[ClusterLink], None], every: float) -> None:
        """What the beat sends the worker, in a thread of its own (a worker process each)."""
        while not stop.wait(every):
            try:
                close_old_connections()
                for link in ClusterLink.objects.select_related("destination"):
                    work(link)
            except Exception as exc:  # noqa: BLE001 - reported, the bench fails on it
                failures.append(repr(exc))
                log(f"beat work failed: {exc!r}")

    # No link an earlier run stopped midway left in the engine (its database is gone; the
    # beat's forget_deleted_links would take it out only at its second round).
    redis_channel.client().delete(control.links_key(process.engine_id()))
    # Warm, as the worker starts it with the stack (settings.ENGINE_LAZY off).
    supervise.supervise_engine()
    _until(lambda: status.engine_status().state == "RUNNING", "the engine's start")
    began = time.monotonic()
    link = create_link(
        system,
        clusters["destination"],
        LINK,
        _link_configs(),
        source=clusters["source"],
    )
    threads = [
        threading.Thread(target=beat, args=(lambda k: syncers.sync_link(k, timezone.now()), 1.0)),
        threading.Thread(target=beat, args=(supervise.supervise, 2.0)),
    ]
    for thread in threads:
        thread.start()
    try:
        made_s = _until(lambda: link.mirrors.count() >= topics, "every mirror made")
        log(f"Isthmus: {topics} mirrors made {made_s:.1f} s after the link")
        _until(lambda: _copied(wanted, lambda t: t), "Isthmus's copy")
        caught_s = time.monotonic() - began
        log(f"Isthmus: every partition copied {caught_s:.1f} s after the link")
        result = {"made_seconds": round(made_s, 1), "caught_up_seconds": round(caught_s, 1)}
        pid = status.engine_status().pid
        assert pid is not None  # the engine runs: it copied
        return {**result, **_idle(pid), **_console(link, len(wanted))}
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        if failures:
            log(f"{len(failures)} beat failures, first: {failures[0]}")
        destination = cluster_admin(clusters["destination"])
        for each in ClusterLink.objects.all():
            supervise.stop(each)
        supervise.stop_engine()
        for name in names:
            read_only.lift(destination, name)
        cluster.delete_topics(DESTINATION, names)


def _console(link, partitions: int) -> dict:
    if partitions != PAGES_AT:
        return {}
    from replication.models import ClusterLink

    return {"at_scale_ms": _at_scale(ClusterLink.objects.get(pk=link.pk))}


def _at_scale(link) -> dict[str, float]:
    """Milliseconds (the median of PAGE_RUNS) the console takes for a link this big: its pages
    as a logged-in admin asks for them, `kafka-mirrors --describe` of the link against the
    console served as `make demo` serves it, and one run of each of the link's syncers."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone
    from waitress.server import create_server

    from console.wsgi import application
    from replication.governance import audit
    from replication.governance.tokens import create_token
    from replication.kafka.connections import destination_admin, source_admin
    from replication.sync import acl_sync, syncers
    from replication.topics import offset_sync

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's
    admin = get_user_model().objects.create_superuser("bench-admin", password=None)
    client = Client()
    client.force_login(admin)
    base = f"/links/{link.destination.name}/{link.name}/"
    pages = {
        "link page": base,
        "mirror list": f"/mirrors/?link={link.name}",
        "dashboard": "/",
        "/metrics": "/metrics",
    }
    timed = {name: _median(partial(_get, client, path)) for name, path in pages.items()}

    server = create_server(application, host="127.0.0.1", port=0, threads=4)
    threading.Thread(target=server.run, daemon=True).start()
    token = create_token(audit.Actor.system("bench"), admin, "bench")[1]
    env = {
        **os.environ,
        # waitress's stubs leave out the port a TCP server binds (effective_port).
        "ISTHMUS_URL": f"http://127.0.0.1:{server.effective_port}",  # type: ignore[union-attr]
        "ISTHMUS_TOKEN": token,
    }
    describe = [str(ROOT / "bin" / "kafka-mirrors"), "--describe", "--links", link.name]
    describe += ["--bootstrap-server", DESTINATION]
    timed["kafka-mirrors --describe"] = _median(
        lambda: subprocess.run(describe, env=env, check=True, capture_output=True)
    )
    server.close()

    source, destination = source_admin(link), destination_admin(link)
    now = timezone.now()
    timed["config sync"] = _median(
        lambda: syncers.sync_topic_configs(link, now, source, destination)
    )
    timed["offset sync"] = _median(lambda: offset_sync.sync_offsets(link, now, source, destination))
    timed["ACL sync"] = _median(lambda: acl_sync.sync_acls(link, source, destination))
    for name, ms in timed.items():
        log(f"At {PAGES_AT:,} partitions: {name} {ms:.0f} ms")
    return timed


def _get(client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)


def _median(work: Callable[[], object]) -> float:
    work()  # warm
    times = []
    for _ in range(PAGE_RUNS):
        began = time.perf_counter()
        work()
        times.append((time.perf_counter() - began) * 1000)
    return round(sorted(times)[len(times) // 2], 1)


def _idle(pid: int) -> dict:
    """The engine's resident memory (its whole process tree) and its share of a core over
    IDLE_S, its links' syncers and supervision still running as the beat runs them."""
    time.sleep(5)
    before = sum(s.cpu for s in procs.tree(pid, procs.all_stats()))
    began = time.monotonic()
    time.sleep(IDLE_S)
    stats = procs.tree(pid, procs.all_stats())
    cpu = (sum(s.cpu for s in stats) - before) / (time.monotonic() - began)
    rss = sum(s.rss for s in stats)
    log(f"Isthmus idle: {cpu:.2%} of a core, {rss >> 20} MiB")
    return {"cpu_share": round(cpu, 4), "rss": rss}


def _commit(ends: dict[tuple[str, int], int]) -> None:
    """A group that read every partition to its middle: what the link's offset sync carries."""
    consumer = Consumer({"bootstrap.servers": SOURCE, "group.id": GROUP})
    try:
        consumer.commit(
            offsets=[TopicPartition(t, p, end // 2) for (t, p), end in ends.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def _clear_earlier() -> None:
    """Every topic an earlier run left (one stopped midway leaves thousands, which a prefix
    would mirror), deleted, and their files gone before as many are made again."""
    for broker, bootstrap in (("source", SOURCE), ("destination", DESTINATION)):
        left = [t for t in cluster.admin(bootstrap).list_topic_names() if PREFIX in t]
        cluster.delete_topics(bootstrap, left)
        cluster.wait_files_deleted(broker, left)


def run(topics: int, partitions: int, records: int) -> dict:
    cluster.ensure_stack()
    WORK.mkdir(parents=True, exist_ok=True)
    names = _names(topics)
    log(f"{topics} topics x {partitions} partitions, {records} records a partition")
    _clear_earlier()
    cluster.create_topics(SOURCE, names, partitions)
    cluster.fill(SOURCE, names, records * partitions, RECORD_SIZE)
    wanted = _source_ends(names, partitions)
    _commit(wanted)
    try:
        mm2_s = run_mm2(wanted)
        log(f"MirrorMaker 2: every partition copied {mm2_s:.1f} s after its start")
        if topics * partitions >= LARGE:  # MM2's, gone before as many are made again
            cluster.wait_files_deleted("destination", [f"source.{n}" for n in names])
        isthmus = run_isthmus(wanted, topics)
    finally:
        cluster.delete_topics(SOURCE, names)
    return {
        "when": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": machine()["CPU"],
        "topics": topics,
        "partitions": partitions,
        "records_per_partition": records,
        "mm2_seconds": round(mm2_s, 1),
        **{f"isthmus_{k}": v for k, v in isthmus.items()},
    }


def section(results: list[dict]) -> str:
    rows, verdicts = [], []
    for r in results:
        total = r["topics"] * r["partitions"]
        ratio = r["isthmus_caught_up_seconds"] / r["mm2_seconds"]
        rows.append(
            f"| {r['topics']:,} × {r['partitions']} ({total:,}) | {r['mm2_seconds']} | "
            f"{r['isthmus_made_seconds']} | **{r['isthmus_caught_up_seconds']}** | "
            f"{ratio:.2f}× | {r['isthmus_cpu_share']:.2%} | {r['isthmus_rss'] / 2**20:,.0f} MiB |"
        )
        target = TARGETS.get(total)
        if target is not None:
            met = "met" if ratio <= target else f"missed by {ratio / target - 1:.0%}"
            verdicts.append(f"- {total:,} partitions: ≤ {target}× MM2's time: **{met}**.")
        if total >= 10_000:
            cpu, rss = r["isthmus_cpu_share"], r["isthmus_rss"]
            verdicts.append(
                f"- {total:,} partitions idle: ≤ {IDLE_CPU:.0%} of a core "
                f"**{'met' if cpu <= IDLE_CPU else 'missed'}** ({cpu:.2%}), ≤ 1.5 GiB "
                f"**{'met' if rss <= IDLE_RSS else 'missed'}** ({rss / 2**30:.2f} GiB)."
            )
    first = results[0]
    console: dict[str, Any] = next(
        (r["isthmus_at_scale_ms"] for r in results if "isthmus_at_scale_ms" in r), {}
    )
    when = ", ".join(sorted({r["when"] for r in results}))
    return f"""## A cluster mirrored by prefix

`python -m bench.cluster_scale` ({when}, {first["cpu"]}): on the source, topics of
{first["partitions"]} partitions with {first["records_per_partition"]} records of {RECORD_SIZE} B
in each. MirrorMaker 2 is started with `topics=bench[.]cs[.].*` and makes its destination topics
itself; Isthmus gets one link with `auto.create.mirror.topics.enable` and a PREFIXED filter,
made as the console makes it, its syncers and supervision run as the beat runs them, on an
engine already running (it starts with the worker). Each timed until every partition on the
destination holds what the source does; then the engine (every process of it) is measured
idle for {IDLE_S:.0f} s, its link's syncers and supervision still running.

{HEADER}
{chr(10).join(rows)}

{chr(10).join(verdicts)}

Before mirrors were made in bulk and partitions started as their leaders came, 2,000 partitions
took 198 s against MM2's 30.5 s (6.5×). What bounds it now is the destination broker: a
partition is copied once its leader answers (the engine hands each out as it does, every
0.2 s), and this machine's one broker opens and leads 2,000 new partitions over 8 to 25 s,
slower the busier the machine is (the link's syncers, the runner's polls for leaders and the
bench's own checks ask the same broker meanwhile); MirrorMaker 2 waits for the same, so half
its time is out of reach. Over the runs of 2026-11-28/29 at 2,000 partitions: MirrorMaker 2
16.0-30.2 s, Isthmus 13.9-26.8 s, 0.52-1.68× (the table shows the last).

At 10,000 partitions Isthmus's time includes making its 10,000 partitions (the broker's 36-80
s of work), MirrorMaker 2's does not (it is given them, see below). Automatic mirrors are made
a controller request's worth at a time (about 450 topics of 10 partitions), each request's
handed to the engine as soon as the broker shows its topics, so the first ones copy while the
broker opens the rest; before that, every mirror waited for the last topic (38 s of 139 s).
Runs on 2026-11-29: MirrorMaker 2 97.5, 147.7 and 178.4 s, and once not done after 12 min
(its fetches from the source broker cancelled as disconnected, again and again: stopped);
Isthmus 151.0 and 152.4 s in the same runs, 93.9 and 139.2 s in runs of its own. Idle, the
engine took 16.7-17.9% of a core in four runs.

Idle at 10,000 partitions, a profile (py-spy, and `top` per process, 20 s): each slot about
6% of a core, the driver 3.5%, the JVM 0.3%. In a slot, Python takes about 1% (positions
noted every 10 s, a copier's report built again every 25 s); the rest is librdkafka's: one
bare consumer of 5,000 idle partitions with the reader's settings uses 2.3% of a core alone
(it asks for every partition in each fetch, twice a second: librdkafka has no incremental
fetch sessions), beside the link's producer and admin clients. A slot also reads its
assignments (every partition's entry) from Redis once a second, with its epoch. In the
driver, encoding each slot's assignment at every beat was two thirds of its Python time;
it is now encoded only when it changes. So the 5% target is out of reach while a slot's
reader fetches every idle partition twice a second; a longer fetch wait would lower it and
delay every new partition by as much (a new link's first record is 1 s now, half of it that
wait).

{_console_section(console)}

{_brokers_section()}
"""


LIST_PAGES = ("link page", "mirror list", "dashboard")


def _brokers_section() -> str:
    return """The brokers are the dev stack's single-broker KRaft clusters as `make demo` runs
them (1 GiB of heap each, `num.partitions=1`). What 10,000 partitions need of them:

- **Open files.** A broker holds one open file for each partition (its active segment; the
  indexes are mapped, not held open), and a deleted partition's until its files are removed,
  `file.delete.delay.ms` (60 s) after the broker took up the deletion. This machine's limit is
  20,000: 10,000 new partitions beside 10,000 just deleted stopped a broker ("Too many open
  files", every log dir failed). So the bench waits until a run's deleted partitions' files are
  gone before it makes as many again. A cluster of 10,000 partitions a broker needs the limit
  well above 10,000 (Kafka's own advice is 100,000).
- **File mappings.** Two a partition (its index and time index): 20,000, under Linux's default
  `vm.max_map_count` of 65,530.
- **Requests of at most 10,000 metadata records.** A KRaft controller refuses a request that
  would write more ("Unable to perform excessively large batch operation"; a topic writes one
  record, and one for each partition and config). MirrorMaker 2 asks for all its topics in one
  request, is refused each time, and copied nothing in 9 minutes; so at 10,000 partitions it is
  given its destination topics, made beforehand and not timed. Isthmus makes its mirrors in
  requests of at most 5,000 records, timed.
- **Time to open them.** The broker shows a request's new topics only once it has opened every
  partition's log, one request after the other: 10,000 partitions took it 36-80 s here, during
  which the mirrors made last wait."""


def _console_section(timed: dict[str, float]) -> str:
    if not timed:
        return ""
    rows = "\n".join(f"| {name} | {ms:,.0f} |" for name, ms in timed.items())
    pages = max(timed[p] for p in LIST_PAGES)
    describe = timed["kafka-mirrors --describe"]
    return f"""The console with that link ({PAGES_AT:,} mirror partitions copying, the engine
reporting each): each page asked for by a logged-in admin, `kafka-mirrors --describe --links`
against the console served by Waitress (the CLI's own start included), and one run of each of
the link's syncers (the offset sync carrying a group committed on every partition); the median
of {PAGE_RUNS} after a first.

| at {PAGES_AT:,} partitions | milliseconds |
| --- | ---: |
{rows}

- List pages < 300 ms: **{"met" if pages < 300 else "missed"}** (the slowest {pages:,.0f} ms).
- `kafka-mirrors --describe` < 3 s: **{"met" if describe < 3000 else "missed"}**
  ({describe / 1000:.2f} s)."""


def _with_earlier(fresh: list[dict]) -> list[dict]:
    """`fresh` results, and those of the last run for cases not run again (each row says when
    it was measured), in order of size."""
    earlier = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    cases = {(r["topics"], r["partitions"]): r for r in [*earlier, *fresh]}
    return [cases[c] for c in sorted(cases, key=lambda c: c[0] * c[1])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        type=lambda t: [tuple(int(n) for n in case.split("x")) for case in t.split(",")],
        default=[(200, 10), (1000, 10)],
        help="topics x partitions, comma-separated",
    )
    parser.add_argument("--records", type=int, default=100, help="in each partition")
    parser.add_argument("--no-doc", action="store_true")
    parser.add_argument("--from-results", action="store_true", help=f"the document from {RESULTS}")
    args = parser.parse_args(argv)
    if args.from_results:
        results = json.loads(RESULTS.read_text())
    else:
        fresh = [run(topics, partitions, args.records) for topics, partitions in args.cases]
        results = _with_earlier(fresh)
        RESULTS.write_text(json.dumps(results, indent=2))
    print(section(results))
    if not args.no_doc:
        sections.CLUSTER_SCALE.write(section(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
