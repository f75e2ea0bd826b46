"""`python -m bench.failback`: what a failback costs against copying everything again.

A topic of `--size-mb` (1 GiB by default, 1 KiB records, 4 partitions) on the source, mirrored
over a bidirectional link: that first copy is exactly what a full re-copy costs, so it is timed
as the baseline. Then a failover; the new primary takes 1 % more, the old primary 0.1 % that the
mirror never got; and a truncate-and-restore of the old primary (`replication.cutover.restore`,
as the console runs it), timed until the restored mirror has caught up. Bytes are counted where they
move: across (from the promoted cluster, by the restored mirror's stream) and within the old
primary's own cluster (set aside and put back). Its own database (var/bench/failback.sqlite3),
so it runs beside `make demo`. Writes var/bench/failback.json and its section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import TYPE_CHECKING

from . import sections
from .cluster import (
    DESTINATION,
    SOURCE,
    WORK,
    create_topic,
    delete_topics,
    django_on_own_database,
    ensure_stack,
    fill,
    log,
    register_clusters,
)

if TYPE_CHECKING:  # the Django models are imported once Django is set up
    from replication.models import ClusterLink

TOPIC, PARTITIONS, RECORD = "bench.failback", 4, 1024
RESULTS = WORK / "failback.json"


def _copied(link, mirror, timeout: float = 900) -> float:
    """Supervise `link`'s stream, as the beat does, until `mirror` has lag 0; the seconds."""
    from replication.engine import supervise
    from replication.observe.lag import describe_mirror

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        supervise.supervise(link)
        status = describe_mirror(mirror)
        if status.partitions and all(
            p.lag == 0 and p.last_fetch_source_high_watermark >= 0 for p in status.partitions
        ):
            return time.monotonic() - started
        time.sleep(0.5)
    raise RuntimeError(f"{mirror.mirror_topic} not copied within {timeout:.0f} s")


def _across(link, records: int) -> int:
    """Bytes (keys and values) the link's stream copied from its source cluster, once its
    heartbeat counts the `records` it copied (it reports every few seconds)."""
    from replication.core import redis_channel
    from spark_jobs import control

    deadline = time.monotonic() + 60
    while True:
        beat = control.link_heartbeat(redis_channel.client(), str(link.link_id))
        if beat and beat["records"] >= records:
            return int(beat["bytes"])
        if time.monotonic() > deadline:
            counted = beat.get("records", 0)
            raise RuntimeError(f"{link.name}: the stream counted {counted} records, not {records}")
        time.sleep(0.5)


# Complex on purpose: one benchmark run from start to end, read top to bottom.
def main() -> int:  # noqa: C901
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()
    ensure_stack()
    django_on_own_database("failback.sqlite3")
    from replication.core import read_only
    from replication.cutover import promote, restore
    from replication.engine import supervise
    from replication.governance import audit
    from replication.kafka.connections import cluster_admin
    from replication.topics.link_creation import create_link
    from replication.topics.links import peer_of
    from replication.topics.mirrors import create_mirror

    actor = audit.Actor.system("bench")
    records = args.size_mb * 1024 * 1024 // RECORD
    changed, stray = records // 100, records // 1000
    clusters = register_clusters(actor)
    quarantine: list[str] = []
    links: list[ClusterLink] = []

    def remove() -> None:
        for each in links:
            supervise.stop(each)
        supervise.stop_engine()  # its own (its own database): nothing else runs on it
        for cluster in clusters.values():  # the fence and the mirrors' ACLs too
            read_only.lift(cluster_admin(cluster), TOPIC)
        delete_topics(SOURCE, [TOPIC, *quarantine])
        delete_topics(DESTINATION, [TOPIC])

    remove()
    try:
        log(f"Writing {records:,} records of {RECORD} B to {TOPIC} on the source")
        create_topic(SOURCE, TOPIC, PARTITIONS)
        fill(SOURCE, [TOPIC], records, RECORD)
        link = create_link(
            actor,
            clusters["destination"],
            "bench-failback",
            {"link.mode": "BIDIRECTIONAL", "metadata.max.age.ms": "5000"},
            source=clusters["source"],
        )
        peer = peer_of(link)
        links += [link, peer]
        mirror = create_mirror(actor, link, TOPIC)
        log("Mirroring it: the full copy, as a re-copy would")
        full_seconds = _copied(link, mirror)
        full_bytes = _across(link, records)
        log(f"Copied {full_bytes:,} bytes in {full_seconds:.1f} s; failing over")
        promote.stop_mirrors(actor, link, [TOPIC], promote.FAILOVER, wait=True)
        supervise.stop(link)
        fill(DESTINATION, [TOPIC], changed, RECORD)  # the new primary's
        fill(SOURCE, [TOPIC], stray, RECORD)  # what the mirror never got
        log(f"{changed:,} records on the new primary, {stray:,} on the old; restoring")
        started = time.monotonic()
        [outcome] = restore.truncate_and_restore(actor, peer, [TOPIC], wait=True)
        if outcome.error:
            raise RuntimeError(outcome.error)
        quarantine.append(outcome.quarantine)
        restore_seconds = time.monotonic() - started
        restored = peer.mirrors.get(mirror_topic=TOPIC)
        delta_seconds = _copied(peer, restored)
        results = {
            "when": time.strftime("%Y-%m-%d %H:%M %Z"),
            "cpus": os.cpu_count(),
            "size_mb": args.size_mb,
            "records": records,
            "changed": changed,
            "stray": stray,
            "full": {"seconds": round(full_seconds, 1), "bytes_across": full_bytes},
            "failback": {
                "restore_seconds": round(restore_seconds, 1),
                "delta_seconds": round(delta_seconds, 1),
                "bytes_across": _across(peer, changed),
                "bytes_within": outcome.bytes_copied_within_cluster,
                "records_truncated": outcome.messages_truncated,
                "records_copied": sum(p["records_to_copy"] for p in outcome.partitions),
            },
        }
        RESULTS.write_text(json.dumps(results, indent=2))
        sections.FAILBACK.write(section(results))
        print(section(results))
        return 0
    finally:
        remove()


def _mib(size: int) -> str:
    return f"{size / 1024 / 1024:,.1f} MiB"


def section(r: dict) -> str:
    full, back = r["full"], r["failback"]
    total = back["restore_seconds"] + back["delta_seconds"]
    rows = [
        ("full re-copy", f"{full['seconds']:.1f} s", _mib(full["bytes_across"]), "–"),
        (
            "truncate-and-restore",
            f"{total:.1f} s ({back['restore_seconds']:.1f} s restore, "
            f"{back['delta_seconds']:.1f} s delta copy)",
            _mib(back["bytes_across"]),
            _mib(back["bytes_within"]),
        ),
    ]
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    share = back["bytes_across"] / max(full["bytes_across"], 1)
    return f"""## Failback: truncate-and-restore against a full re-copy

Written by `python -m bench.failback` ({r["when"]}, {r["cpus"]} cores): a topic of
{r["size_mb"]:,} MiB ({r["records"]:,} records of 1 KiB, 4 partitions) mirrored over a
bidirectional link, then failed over. The new primary took {r["changed"]:,} more records (1 %),
the old primary {r["stray"]:,} that the mirror never got (0.1 %). The full copy is the first
mirroring of the topic, which is what copying it back from scratch costs; the failback is a
truncate-and-restore of the old primary until its mirror has caught up.

| way back | time | bytes across (from the promoted cluster) | bytes within the old primary |
| --- | ---: | ---: | ---: |
{table}

The failback copied {back["records_copied"]:,} records across, {share:.1%} of a full
re-copy's bytes, and set {back["records_truncated"]:,} aside in the quarantine topic. Its
price is local: the shared prefix is copied aside and back within the old primary's own
cluster (twice the topic's bytes, through one client, partition after partition), because
stock Kafka cannot cut a partition's tail. Here both clusters share the loopback interface,
so that local copy makes the failback {"slower" if total > full["seconds"] else "no faster"}
than a re-copy; between datacenters the bytes across are what cost: over a 100 Mbit/s link a
re-copy's {_mib(full["bytes_across"])} take {_wan(full["bytes_across"])}, the failback's
{_mib(back["bytes_across"])} {_wan(back["bytes_across"])}. The delta copy's time includes the
restored mirror's stream starting (a Spark application of its own today)."""


def _wan(size: int) -> str:
    """How long `size` bytes take at 100 Mbit/s."""
    return f"{size * 8 / 100e6:,.1f} s"


if __name__ == "__main__":
    sys.exit(main())
