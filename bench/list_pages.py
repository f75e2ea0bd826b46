"""`python -m bench.list_pages`: how fast the console's list pages render with many links.

50 links and 1,000 mirror topics (20 each, in a mix of states), 5,000 audit events and 20
pending approval requests, in a database of its own (var/bench/list-pages.sqlite3); Redis is
the dev stack's, where the links' streams would report (they do not run here: the pages read
the reports, and an absent report costs the same round trip). Each page is asked for as a
logged-in admin through Django's test client: 5 requests to warm up, then 30 timed, with the
SQL queries each answer made. The clusters' page is left out: it asks each cluster, live, by
design. Writes var/bench/list-pages.json and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from . import sections
from .cluster import WORK, django_on_own_database, log
from .report import machine

LINKS, MIRRORS_PER_LINK, EVENTS, REQUESTS = 50, 20, 5000, 20
WARM, TIMED = 5, 30
PAGES = {
    "overview": "/",
    "links": "/links/",
    "mirrors": "/mirrors/",
    "approvals": "/approvals/",
    "audit trail": "/audit/",
    "scenarios": "/scenarios/",
}
RESULTS = WORK / "list-pages.json"


def _django() -> None:
    django_on_own_database("list-pages.sqlite3")
    from django.conf import settings

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's host


def _seed():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone

    from replication.models import (
        ApprovalRequest,
        AuditEvent,
        ClusterLink,
        KafkaCluster,
        MirrorTopic,
    )

    source = KafkaCluster.objects.create(
        name="source", bootstrap_servers="127.0.0.1:1", cluster_id="bench-source"
    )
    destination = KafkaCluster.objects.create(
        name="destination", bootstrap_servers="127.0.0.1:2", cluster_id="bench-destination"
    )
    links = ClusterLink.objects.bulk_create(
        ClusterLink(
            name=f"bench-link-{i:02d}",
            destination=destination,
            source_cluster_id=source.cluster_id,
            configs={"bootstrap.servers": "127.0.0.1:1"},
            state=ClusterLink.State.ACTIVE if i % 10 else ClusterLink.State.PAUSED,
        )
        for i in range(LINKS)
    )
    states = [
        MirrorTopic.State.ACTIVE,
        MirrorTopic.State.ACTIVE,
        MirrorTopic.State.PAUSED,
        MirrorTopic.State.STOPPED,
        MirrorTopic.State.FAILED,
    ]
    MirrorTopic.objects.bulk_create(
        MirrorTopic(
            link=link,
            destination=destination,
            source_topic=f"bench-{link.name}-t{j:02d}",
            mirror_topic=f"bench-{link.name}-t{j:02d}",
            num_partitions=8,
            replication_factor=1,
            state=states[j % len(states)],
            error_message="The source topic was deleted." if j % 5 == 4 else "",
        )
        for link in links
        for j in range(MIRRORS_PER_LINK)
    )
    users = get_user_model().objects
    admin = users.create_superuser("bench-admin", password=None)
    operator = users.create_user("bench-operator", password=None)
    # An operator may ask: a requester without the role would see their requests superseded.
    operator.groups.add(Group.objects.get_or_create(name="operator")[0])
    now = timezone.now()
    AuditEvent.objects.bulk_create(
        AuditEvent(
            actor_name="bench-operator",
            action="mirror.create",
            target=f"mirror bench-{i}",
            result="ok",
            at=now,
        )
        for i in range(EVENTS)
    )
    ApprovalRequest.objects.bulk_create(
        ApprovalRequest(
            link=links[i],
            link_name=links[i].name,
            destination=destination,
            approvals_required=1,
            action=ApprovalRequest.Action.PROMOTE,
            topics=[f"bench-{links[i].name}-t00"],
            requester=operator,
            requester_name=operator.username,
            reason="bench",
            expires_at=now + timezone.timedelta(days=1),
        )
        for i in range(REQUESTS)
    )
    return admin


def _measure(user) -> dict[str, dict]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(user)
    results = {}
    for name, path in PAGES.items():
        for _ in range(WARM):
            assert client.get(path).status_code == 200, path
        times = []
        for _ in range(TIMED):
            with CaptureQueriesContext(connection) as queries:
                began = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200, path
        results[name] = {
            "path": path,
            "median_ms": round(statistics.median(times), 1),
            "p95_ms": round(sorted(times)[int(0.95 * len(times)) - 1], 1),
            "queries": len(queries),
            "bytes": len(response.content),
        }
        log(f"{path}: median {results[name]['median_ms']} ms, {len(queries)} queries")
    return results


def section(r: dict) -> str:
    rows = "\n".join(
        f"| {name} (`{p['path']}`) | {p['median_ms']:.0f} ms | {p['p95_ms']:.0f} ms | "
        f"{p['queries']} | {p['bytes'] // 1024} KiB |"
        for name, p in r["pages"].items()
    )
    return f"""## List pages with 50 links and 1,000 mirror topics

Written by `python -m bench.list_pages` ({r["when"]}, {r["cpu"]}): {LINKS}
links, {LINKS * MIRRORS_PER_LINK:,} mirror topics (a mix of ACTIVE, PAUSED, STOPPED and
FAILED), {EVENTS:,} audit events and {REQUESTS} pending approval requests in SQLite; each
page asked for {TIMED} times as an admin through Django's test client, after {WARM} to warm
up. The aim: every list page under 200 ms. Lag and throughput come from what the streams
report in Redis (one read per link), never from a cluster per row; the query count does not
grow with the rows.

| page | median | p95 | SQL queries | size |
| --- | ---: | ---: | ---: | ---: |
{rows}

The clusters page is not here: it asks each registered cluster who it is, live, every time."""


def main() -> int:
    _django()
    user = _seed()
    pages = _measure(user)
    results = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": machine()["CPU"],
        "pages": pages,
    }
    RESULTS.write_text(json.dumps(results, indent=2))
    sections.LIST_PAGES.write(section(results))
    slow = [name for name, p in pages.items() if p["median_ms"] >= 200]
    if slow:
        log(f"Over 200 ms: {', '.join(slow)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
