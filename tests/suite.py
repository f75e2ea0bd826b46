"""`make test`'s runner, by tiers. The fast tier (tests/unit and tests/db: no cluster) runs
in parallel workers (pytest-xdist, a module to a worker), with --coverage under coverage.py,
which reports the line coverage of the cutover and mirror modules. The Kafka tier (the tests
marked `kafka`: clusters, Spark, Chromium) runs in parallel workers on the embedded stack,
which starts once for all of them. Beside it, the tests that stop brokers or Redis (marked
`serial`) run one after another on a second stack of their own (ports shifted by
ISTHMUS_DEVSTACK_PORT_OFFSET, state in var/serial-stack/), so no other test, and no
`make demo` running beside, sees their outages. (On two stacks at once, beside the others on
2 cores, two of them did not see their engine copy within minutes.) Each stack stops at the
end if it was not up before.

    python -m tests.suite [--tiers fast,kafka] [--coverage] [pytest arguments, e.g. files]

`make test` runs the Kafka tier on SQLite and the fast tier on PostgreSQL, each once.
ISTHMUS_TEST_WORKERS sets the number of parallel workers (default 2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import django
from django.conf import settings

NO_TESTS_COLLECTED = 5
SERIAL_PORT_OFFSET = "1000"  # Kafka on 10092/10093, Redis on 7380, PostgreSQL on 6433
# The fast tier's line coverage of the domain (into .coverage), and the modules it reports.
COVERAGE = ["--cov=replication", "--cov-report="]
COVERED = [
    "--include="
    + ",".join(
        f"replication/{name}.py"
        for name in (
            "topics/mirrors",
            "topics/links",
            "topics/link_availability",
            "cutover/promote",
            "cutover/stop_batches",
            "cutover/reverse",
            "cutover/restore",
            "cutover/restore_plan",
            "cutover/restore_quarantine",
            "topics/offset_sync",
        )
    )
]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.suite")
    parser.add_argument("--tiers", default="fast,kafka", help="fast, kafka or both (default)")
    parser.add_argument("--coverage", action="store_true", help="measure the fast tier")
    options, args = parser.parse_known_args(argv)
    tiers = set(options.tiers.split(","))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    django.setup()
    pytest = [sys.executable, "-m", "pytest", *args]
    parallel = [*pytest, "-n", os.environ.get("ISTHMUS_TEST_WORKERS", "2"), "--dist=loadfile"]
    codes = []
    if "fast" in tiers:
        measured = COVERAGE if options.coverage else []
        codes.append(subprocess.call([*parallel, "-m", "not kafka", *measured]))
        if options.coverage and codes[-1] == 0:
            subprocess.call([sys.executable, "-m", "coverage", "report", *COVERED])
    if "kafka" in tiers:
        codes += _kafka_tier(pytest, parallel)
    failed = (rc for rc in codes if rc not in (0, NO_TESTS_COLLECTED))
    return next(failed, 0)


def _kafka_tier(pytest: list[str], parallel: list[str]) -> list[int]:
    """The Kafka tier in parallel workers, and beside it the serial tests on a stack of their
    own; their return codes."""
    from devstack.stack import Stack
    from tests.shared_stack import parts_of, shared_stack

    serial_var = settings.VAR_DIR / "serial-stack"
    serial_env = {
        **os.environ,
        "ISTHMUS_DEVSTACK_PORT_OFFSET": SERIAL_PORT_OFFSET,
        "ISTHMUS_VAR_DIR": str(serial_var),
    }
    subprocess.run([sys.executable, "manage.py", "init_var", "-v", "0"], env=serial_env, check=True)
    serial_log = serial_var / "pytest.log"
    stack = Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)
    with shared_stack(stack, parts_of(stack)), open(serial_log, "w") as log:
        alone = subprocess.Popen(
            [*pytest, "-m", "serial and not faults"],
            env=serial_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        slow = subprocess.call([*parallel, "-m", "kafka and not serial and not faults"])
        alone.wait()
    print(f"\nThe tests that stop brokers or Redis, on a stack of their own ({serial_log}):")
    print(Path(serial_log).read_text(errors="replace"), flush=True)
    return [slow, alone.returncode]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
