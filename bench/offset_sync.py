"""`python -m bench.offset_sync`: consumer offset sync at scale, on the dev stack's clusters.

1,000 consumer groups on the source, each with committed offsets on every partition of one of
20 topics of 10 partitions (200 mirror partitions, 10,000 committed offsets), over one link
with offset sync on. Times three runs of the syncer (`replication.topics.offset_sync.sync_offsets`,
as the syncer calls it) and counts the Admin API requests each makes:

1. the first run: every group is new to the destination, all 10,000 offsets are written;
2. a run with nothing changed: nothing is written;
3. a run after 100 groups moved on: only their offsets are written.

The mirrors hold the source's records at the same offsets, written there directly (this
measures the syncer, not the copy). Its own database (var/bench/offset-sync.sqlite3), so it
runs beside `make demo`. Writes var/bench/offset-sync.json and its section of
docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections import Counter

from infra.kafka_acls import acl_filter, exact_filter

from . import sections
from .cluster import WORK, django_on_own_database, log, register_clusters

TOPICS, PARTITIONS, GROUPS, RECORDS, MOVED = 20, 10, 1000, 100, 100
PREFIX = "bench.osync"
RESULTS = WORK / "offset-sync.json"


class Counting:
    """An AdminClient that counts the requests made through it, by API."""

    calls: Counter = Counter()

    @classmethod
    def wrap(cls, admin_class):
        counts = cls.calls

        class CountingAdminClient(admin_class):
            def __getattribute__(self, name):
                attribute = super().__getattribute__(name)
                if callable(attribute) and not name.startswith("_") and name != "poll":
                    counts[name] += 1
                return attribute

        return CountingAdminClient


# Complex on purpose: one benchmark run from start to end, read top to bottom.
def main() -> int:  # noqa: C901
    django_on_own_database("offset-sync.sqlite3")
    from confluent_kafka import Producer
    from django.conf import settings
    from django.utils import timezone

    import infra.kafka_admin
    from devstack import kafka
    from infra.admin_client import AdminClient
    from replication.governance import audit
    from replication.kafka.connections import destination_admin, source_admin
    from replication.models import GroupOffsetSync
    from replication.topics import offset_sync
    from replication.topics.link_creation import create_link
    from replication.topics.mirrors import create_mirror

    actor = audit.Actor.system("bench")
    configs = {n.name: kafka.sasl_client_config(n, settings.VAR_DIR) for n in kafka.NODES}
    topics = [f"{PREFIX}-{i:02d}" for i in range(TOPICS)]
    groups = [f"{PREFIX}-group-{i:04d}" for i in range(GROUPS)]
    source = AdminClient({**configs["source"]})
    destination = AdminClient({**configs["destination"]})
    _remove(source, destination, topics, groups)
    try:
        log(f"Making {TOPICS} topics of {PARTITIONS} partitions with {RECORDS} records each")
        from confluent_kafka.admin import NewTopic

        for f in source.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).values():
            f.result(60)
        time.sleep(1)
        producer = Producer({**configs["source"], "linger.ms": 5})
        for t in topics:
            for p in range(PARTITIONS):
                for i in range(RECORDS):
                    producer.produce(t, value=f"{i}".encode(), partition=p)
        producer.flush(60)
        clusters = register_clusters(actor)
        link = create_link(
            actor,
            clusters["destination"],
            "bench-offset-sync",
            {
                **{k: v for k, v in configs["source"].items() if k.startswith("bootstrap")},
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": configs["source"]["sasl.password"],
                "cluster.link.paused": "true",  # nothing copies: the records are put below
                "consumer.offset.sync.enable": "true",
                "consumer.offset.group.filters": json.dumps(
                    {"groupFilters": [{"name": f"{PREFIX}-group-", "patternType": "PREFIXED"}]}
                ),
            },
        )
        for t in topics:
            create_mirror(actor, link, t)
        copier = Producer({**configs["destination"], "linger.ms": 5})  # a super user
        for t in topics:
            for p in range(PARTITIONS):
                for i in range(RECORDS):
                    copier.produce(t, value=f"{i}".encode(), partition=p)
        copier.flush(60)
        log(f"Committing offsets for {GROUPS} groups on the source")
        rng = random.Random(7)  # noqa: S311 (offsets to commit, not secrets)
        _commit(source, {g: (topics[i % TOPICS], rng) for i, g in enumerate(groups)})

        # setattr: the module does not export the name, which is what counting replaces.
        setattr(infra.kafka_admin, "AdminClient", Counting.wrap(AdminClient))  # noqa: B010
        runs = []
        for label in ("first run: all written", "nothing changed", f"{MOVED} groups moved on"):
            if label.startswith(str(MOVED)):
                _commit(
                    source, {g: (topics[i % TOPICS], rng) for i, g in enumerate(groups[:MOVED])}
                )
            link.refresh_from_db()
            Counting.calls.clear()
            started = time.monotonic()
            outcome = offset_sync.sync_offsets(
                link, timezone.now(), source_admin(link), destination_admin(link)
            )
            seconds = time.monotonic() - started
            runs.append(
                {
                    "run": label,
                    "seconds": round(seconds, 2),
                    "groups": len(outcome.groups),
                    "in_step": outcome.count(GroupOffsetSync.State.IN_STEP),
                    "written": len(outcome.written),
                    "requests": dict(Counting.calls),
                }
            )
            log(f"{label}: {seconds:.2f} s, {len(outcome.written)} groups written, {runs[-1]}")
        setattr(infra.kafka_admin, "AdminClient", AdminClient)  # noqa: B010
        results = {
            "when": time.strftime("%Y-%m-%d %H:%M %Z"),
            "groups": GROUPS,
            "partitions": TOPICS * PARTITIONS,
            "offsets": GROUPS * PARTITIONS,
            "interval_ms": link.int_config("consumer.offset.sync.ms"),
            "runs": runs,
            "cpus": os.cpu_count(),
        }
        RESULTS.write_text(json.dumps(results, indent=2))
        sections.OFFSET_SYNC.write(section(results))
        print(section(results))
        return 0
    finally:
        _remove(source, destination, topics, groups)


def _commit(admin, wanted: dict) -> None:
    """Commit, for each group, an offset somewhere in every partition of its topic."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    futures = []
    for group, (topic, rng) in wanted.items():
        offsets = [TopicPartition(topic, p, rng.randrange(RECORDS + 1)) for p in range(PARTITIONS)]
        futures += admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, offsets)]
        ).values()
    for future in futures:
        future.result(60)


def _remove(source, destination, topics: list[str], groups: list[str]) -> None:
    from confluent_kafka.admin import (
        ResourceType,
    )

    for admin in (source, destination):
        present = [t for t in topics if t in admin.list_topics(timeout=30).topics]
        for f in admin.delete_topics(present).values() if present else []:
            f.exception(60)
        for f in admin.delete_consumer_groups(groups, request_timeout=60).values():
            f.exception(60)
    acls = acl_filter(ResourceType.TOPIC)
    found = [b for b in destination.describe_acls(acls).result(30) if b.name.startswith(PREFIX)]
    if found:
        for f in destination.delete_acls([exact_filter(b) for b in found]).values():
            f.exception(60)


def section(r: dict) -> str:
    rows = "\n".join(
        f"| {run['run']} | {run['seconds']:.2f} s | {run['written']:,} | "
        f"{', '.join(f'{k} {v:,}' for k, v in sorted(run['requests'].items()))} |"
        for run in r["runs"]
    )
    return f"""## Consumer offset sync at scale

Written by `python -m bench.offset_sync` ({r["when"]}, {r["cpus"]} cores): {r["groups"]:,} consumer
groups on the source, each with a committed offset on every partition of one of the link's
mirrors, {r["partitions"]} mirror partitions, {r["offsets"]:,} committed offsets in all. One run of
the syncer, timed, with the Admin API requests it made (a client call; the per-group calls
carry one group each, as Kafka's client takes them, and go out all at once):

| run | time | groups written | Admin API requests |
| --- | ---: | ---: | --- |
{rows}

Every run is well within the default interval, `consumer.offset.sync.ms` =
{r["interval_ms"]:,} ms. Requests grow with the number of groups (one offset fetch each on the
source) and with the groups that changed (one commit each on the destination), never with
partitions: ListOffsets and DescribeTopics are one request for all mirror partitions, and
DescribeGroups one for all changed groups. The destination's committed offsets are read only
for groups the syncer has not seen before."""


if __name__ == "__main__":
    sys.exit(main())
