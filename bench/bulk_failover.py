"""`python -m bench.bulk_failover`: failing over every mirror of a link in one action.

`--mirrors` topics (1,000 by default, one partition and 10 records each) on the source,
mirrored over one link whose stream runs and has copied them all; then one failover of all of
them, as an admin acting at once (the link's policy needs no approval) asks for it in the
console: `approvals.submit`, then the stops finished as the Celery task and the beat finish
them. Timed from the submit until every mirror is STOPPED (writable, its read-only ACLs
lifted); the making of the mirrors is timed too. Its own database
(var/bench/bulk-failover.sqlite3), so it runs beside `make demo`. Writes
var/bench/bulk-failover.json and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from . import sections
from .cluster import (
    DESTINATION,
    SOURCE,
    WORK,
    create_topics,
    delete_topics,
    django_on_own_database,
    ensure_stack,
    fill,
    log,
    register_clusters,
)
from .report import machine

if TYPE_CHECKING:  # the Django models are imported once Django is set up
    from replication.models import ClusterLink

RESULTS = WORK / "bulk-failover.json"
RECORDS = 10
TARGET_S = 30


def _names(count: int) -> list[str]:
    return [f"bench.bulk.{i:04d}" for i in range(count)]


def _until(check, timeout: float, what: str, each=None) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"{what} not within {timeout:.0f} s")
        if each is not None:
            each()
        time.sleep(0.5)
    return time.monotonic() - started


# Complex on purpose: one benchmark run from start to end, read top to bottom.
def run(count: int) -> dict:  # noqa: C901
    ensure_stack()
    django_on_own_database("bulk-failover.sqlite3")
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from replication.actions import approvals, request_runs
    from replication.core import read_only
    from replication.engine import supervise
    from replication.governance import audit
    from replication.kafka.connections import cluster_admin
    from replication.models import MirrorTopic
    from replication.observe import lag
    from replication.topics.link_creation import create_link
    from replication.topics.mirrors import create_mirrors

    system = audit.Actor.system("bench")
    clusters = register_clusters(system)
    admin_user = get_user_model().objects.create_user("bench-admin")
    admin_user.groups.add(Group.objects.get_or_create(name="admin")[0])
    admin = audit.Actor(user=admin_user, name="bench-admin")
    names = _names(count)
    links: list[ClusterLink] = []

    def remove() -> None:
        for each in links:
            supervise.stop(each)
        supervise.stop_engine()
        destination = cluster_admin(clusters["destination"])
        for name in names:
            read_only.lift(destination, name)
        delete_topics(SOURCE, names)
        delete_topics(DESTINATION, names)

    remove()
    try:
        log(f"{count} topics of {RECORDS} records on the source")
        create_topics(SOURCE, names, 1)
        fill(SOURCE, names, RECORDS, 100)
        link = create_link(
            system,
            clusters["destination"],
            "bench-bulk",
            {"metadata.max.age.ms": "5000"},
            source=clusters["source"],
        )
        links.append(link)
        link.approvals_required = 0
        link.save(update_fields=["approvals_required"])
        started = time.monotonic()
        create_mirrors(system, link, names)  # as the API or a script asks for many at once
        made_s = time.monotonic() - started
        log(f"Made {count} mirrors in {made_s:.1f} s; copying them")
        mirrors = list(link.mirrors.select_related("link", "destination"))

        def copied() -> bool:
            return all(s.max_lag == 0 for s in lag.describe_mirrors(mirrors))

        copy_s = _until(copied, 900, "the copy", lambda: supervise.supervise(link))
        log(f"Copied in {copy_s:.1f} s; failing all {count} over in one action")
        started = time.monotonic()
        submission = approvals.submit(admin, link, "failover", names, "bench: the region is lost")
        submitted_s = time.monotonic() - started
        refused = [o for o in submission.outcomes if o.error]
        if refused:
            raise RuntimeError(f"{len(refused)} refused, first: {refused[0].error}")

        def stopped() -> bool:
            left = link.mirrors.exclude(state=MirrorTopic.State.STOPPED).count()
            return left == 0

        def move_on() -> None:  # as the Celery task (twice a second) and the beat do
            request_runs.finish_stops(link)
            supervise.supervise(link)

        _until(stopped, 600, "every mirror STOPPED", move_on)
        failover_s = time.monotonic() - started
        log(f"All {count} STOPPED {failover_s:.1f} s after the submit ({submitted_s:.1f} s in it)")
        return {
            "when": time.strftime("%Y-%m-%d %H:%M %Z"),
            "cpu": machine()["CPU"],
            "mirrors": count,
            "make_mirrors_seconds": round(made_s, 1),
            "copy_seconds": round(copy_s, 1),
            "submit_seconds": round(submitted_s, 1),
            "failover_seconds": round(failover_s, 1),
        }
    finally:
        remove()


def section(r: dict) -> str:
    verdict = "within" if r["failover_seconds"] <= TARGET_S else "over"
    made_s = r["make_mirrors_seconds"]
    made = "within" if made_s <= TARGET_S else "over"
    return f"""## Failing over every mirror of a link at once

`python -m bench.bulk_failover` ({r["when"]}, {r["cpu"]}): {r["mirrors"]:,} mirror topics
(one partition, {RECORDS} records each) on one link whose stream runs and has copied them; an
admin fails all of them over in one action, as the console's bulk action does
(`approvals.submit`, the link needing no approval), the stops finished as the Celery task and
the beat finish them.

| what | seconds |
| --- | ---: |
| make the {r["mirrors"]:,} mirror topics in one request (`create_mirrors`) | {made_s} |
| their first copy | {r["copy_seconds"]} |
| the failover's submit (dry run of all, each begun) | {r["submit_seconds"]} |
| **from the submit until every mirror is STOPPED (writable)** | **{r["failover_seconds"]}** |

The failover: {verdict} the {TARGET_S} s target for 1,000 mirrors; their creation in bulk: {made}
it (the target for 1,000 mirrors made at once, all or nothing).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=int, default=1000)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    results = run(args.mirrors)
    RESULTS.write_text(json.dumps(results, indent=2))
    if not args.no_doc:
        sections.BULK_FAILOVER.write(section(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
