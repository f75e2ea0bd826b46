"""`python -m bench.schema_sync`: schema sync at scale, on the dev stack's two registries.

1,000 subjects on the source's registry, each with two versions (2,000 schemas), the first of
every tenth subject referenced by another subject's. One link syncs them
(`schema.subjects=<prefix>*`). Times three runs of the syncer (`link_schema_sync.sync_link_schemas`,
as the syncers call it), with the HTTP requests each makes to each registry and the CPU time the
console's process spent:

1. the first sync: every version registered on the destination under its id;
2. steady state, nothing changed (what every `schema.sync.ms` costs);
3. 10 subjects with a new version.

Its own database (var/bench/schema-sync.sqlite3), so it runs beside `make demo`; its subjects
carry a prefix of the run's own and are deleted afterwards. Writes var/bench/schema-sync.json
and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

from . import sections
from .cluster import ROOT, WORK, django_on_own_database, log, register_clusters

SUBJECTS, CHANGED = 1000, 10
RESULTS = WORK / "schema-sync.json"


def _schema(prefix: str, i: int, fields: int) -> str:
    listed = [{"name": f"f{n}", "type": ["null", "int"], "default": None} for n in range(fields)]
    return json.dumps({"type": "record", "name": f"R{i}", "namespace": prefix, "fields": listed})


class Counting:
    """HTTP requests by registry (host:port) and method, through every requests session."""

    calls: Counter = Counter()

    @classmethod
    def install(cls) -> None:
        import requests

        original = requests.Session.request

        def counted(session, method, url, *args, **kwargs):
            cls.calls[f"{url.split('/')[2]} {method}"] += 1
            return original(session, method, url, *args, **kwargs)

        # setattr: mypy refuses an assignment to a method, which is what counting takes.
        setattr(requests.Session, "request", counted)  # noqa: B010


# Complex on purpose: one benchmark run from start to end, read top to bottom.
def main() -> int:  # noqa: C901
    subprocess.run(
        [sys.executable, "manage.py", "devstack", "up", "redis", "source", "destination"]
        + ["source-registry", "destination-registry"],
        cwd=ROOT,
        check=True,
    )
    django_on_own_database("schema-sync.sqlite3")
    from django.utils import timezone

    from devstack import registry
    from infra.schema_registry import Reference, SchemaRegistry, SchemaVersion
    from replication.governance import audit
    from replication.models import ClusterLink, SchemaSubjectSync
    from replication.schemas import link_schema_sync
    from replication.schemas.schema_registries import RegistryAccess, set_schema_registry
    from replication.topics.link_creation import create_link

    actor = audit.Actor.system("bench")
    prefix = f"bench_schemas_{int(time.time())}"
    source = SchemaRegistry(registry.SOURCE.url, timeout=30)
    destination = SchemaRegistry(registry.DESTINATION.url, timeout=30)
    subjects = [f"{prefix}-{i:04d}-value" for i in range(SUBJECTS)]
    try:
        log(f"Registering {SUBJECTS} subjects of 2 versions each on the source's registry")
        for i, subject in enumerate(subjects):
            refs: tuple[Reference, ...] = ()
            if i % 10 == 1:  # references the first version of the subject before it
                refs = (Reference(f"{prefix}.R{i - 1}", subjects[i - 1], 1),)
            for fields in (1, 2):
                version = SchemaVersion(subject, 0, 0, _schema(prefix, i, fields), "AVRO", refs)
                source.register(version, keep_id=False)
        clusters = register_clusters(actor)
        for name, url in (
            ("source", registry.SOURCE.url),
            ("destination", registry.DESTINATION.url),
        ):
            set_schema_registry(actor, clusters[name], RegistryAccess(url))
        link = create_link(
            actor,
            clusters["destination"],
            "bench-schema-sync",
            {
                "bootstrap.servers": clusters["source"].bootstrap_servers,
                **clusters["source"].link_connection_config(),
                "cluster.link.paused": "true",  # the syncer is called directly below
                "schema.sync.enable": "true",
                "schema.subjects": f"{prefix}-*",
            },
        )
        Counting.install()
        runs = []
        for label in ("first sync: all registered", "nothing changed", f"{CHANGED} new versions"):
            if label.startswith(str(CHANGED)):
                for i, subject in enumerate(subjects[:CHANGED]):
                    source.register(
                        SchemaVersion(subject, 0, 0, _schema(prefix, i, 3)), keep_id=False
                    )
            link = ClusterLink.objects.get(pk=link.pk)
            Counting.calls.clear()
            cpu, started = time.process_time(), time.monotonic()
            done = link_schema_sync.sync_link_schemas(link)
            seconds, cpu = time.monotonic() - started, time.process_time() - cpu
            registered = sum(len(d.registered) for d in done)
            by_registry: Counter[str] = Counter()
            for key, n in Counting.calls.items():
                side = "source" if key.split(" ")[0] in registry.SOURCE.url else "destination"
                by_registry[side] += n
            runs.append(
                {
                    "run": label,
                    "seconds": round(seconds, 2),
                    "cpu_seconds": round(cpu, 2),
                    "subjects": len(done),
                    "registered": registered,
                    "in_step": sum(d.in_step for d in done),
                    "requests": dict(by_registry),
                }
            )
            log(f"{label}: {runs[-1]}")
        rows = SchemaSubjectSync.objects.filter(link=link, state="IN_STEP").count()
        mismatched = [
            s
            for s in subjects[:: SUBJECTS // 20]
            if source.versions(s) != destination.versions(s)
            or source.version(s, 2).id != destination.version(s, 2).id
        ]
        results = {
            "when": time.strftime("%Y-%m-%d %H:%M %Z"),
            "subjects": SUBJECTS,
            "versions": 2 * SUBJECTS,
            "interval_ms": link.int_config("schema.sync.ms"),
            "in_step_rows": rows,
            "sampled_mismatches": mismatched,
            "runs": runs,
            "cpus": os.cpu_count(),
            "at": timezone.now().isoformat(),
        }
        RESULTS.write_text(json.dumps(results, indent=2))
        sections.SCHEMA_SYNC.write(section(results))
        print(section(results))
        return 0 if not mismatched and rows == SUBJECTS else 1
    finally:
        log("Deleting the run's subjects on both registries")
        for held_by in (destination, source):
            for subject in reversed(subjects):  # referencing subjects first
                held_by.delete_subject(subject)


def section(r: dict) -> str:
    rows = "\n".join(
        f"| {run['run']} | {run['seconds']:.2f} s | {run['cpu_seconds']:.2f} s | "
        f"{run['registered']:,} | {run['requests'].get('source', 0):,} | "
        f"{run['requests'].get('destination', 0):,} |"
        for run in r["runs"]
    )
    return f"""## Schema sync at scale

Written by `python -m bench.schema_sync` ({r["when"]}, {r["cpus"]} cores): {r["subjects"]:,}
subjects on the source's registry (the embedded AxonOps Schema Registry), {r["versions"]:,}
versions, one subject in ten referencing another's; one link syncing them all
(`schema.subjects`). One run of the syncer, timed, with the console's CPU time and the HTTP
requests it made to each registry:

| run | time | CPU | versions registered | requests to the source | to the destination |
| --- | ---: | ---: | ---: | ---: | ---: |
{rows}

After the runs, {r["in_step_rows"]:,} subjects show IN_STEP on the link, and a sample of one
subject in fifty has the same versions under the same ids on both registries
({len(r["sampled_mismatches"])} differ).

A run reads each registry whole in a few listing requests (`GET /schemas`, soft-deleted
versions and live ones, 1,000 a page) and writes only what differs: a version to register is
read alone first (one request each: some registries' listings leave references out), a delete
is confirmed with the subject's own version list. Two requests per subject are left: the
read of its mode on the destination, which keeps the synced subjects in IMPORT mode (one changed
there by hand is put back at the next run), so a destination producer cannot register a
version the next run would have to delete; and the read of its compatibility level on the
source (Confluent's API lists no configs in bulk), so that a promoted subject's producers meet
the source's rules (the destination's level is read and set only when the source's changed).
The steady-state run is what each `schema.sync.ms`
({r["interval_ms"]:,} ms by default) costs; a record waiting for a schema does not wait for
it: the ids it needs are synced within a second, by a run of their subjects alone."""


if __name__ == "__main__":
    sys.exit(main())
