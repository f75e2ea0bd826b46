"""`make test`'s runner, by tiers. The fast tier (tests/unit and tests/db: no cluster) runs
in parallel workers (pytest-xdist, a module to a worker), with --coverage under coverage.py,
which reports the line coverage of the cutover and mirror modules. The Kafka tier (the tests
marked `kafka`: clusters, Spark, Chromium) runs in parallel workers on the embedded stack,
which starts once for all of them. The tests that stop brokers or Redis, or load them heavily
(marked `serial`), run one after another on a second stack of their own (ports shifted by
ISTHMUS_DEVSTACK_PORT_OFFSET, state in var/serial-stack/), so no other test, and no `make demo`
running beside, sees their outages. With --postgres-beside, the fast tier runs on PostgreSQL
under coverage, and the integration tests of what the database decides run there last. Each
stack stops at the end if it was not up before.

    python -m tests.suite [--tiers fast,kafka] [--coverage] [--without-serial]
                          [--postgres-beside PATH ...] [pytest arguments, e.g. files]

In what order, on 2 cores: the fast tier, then the Kafka tier, then PostgreSQL's integration
tests; beside them, first the serial tests marked `heavy` (a thousand partitions), which the
Kafka tier waits for, then the rest of the serial tests at a lower CPU priority (SERIAL_NICE),
so that the other tiers' brokers and Redis come first. Why so: docs/testing.md.
ISTHMUS_TEST_WORKERS sets the number of the fast tier's parallel workers (default 2),
ISTHMUS_KAFKA_TEST_WORKERS the Kafka tier's (3).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import django
from django.conf import settings

NO_TESTS_COLLECTED = 5
BESIDE_REDIS_DB = "12"  # and below; the Kafka tier's workers take 15 and down (tests/conftest.py)
SERIAL_PORT_OFFSET = "1000"  # Kafka on 10092/10093, Redis on 7380, PostgreSQL on 6433
# Beside the Kafka tier, the serial tests, their brokers, engine and worker take the CPU the
# tier leaves: a tenth of it when both want it (Linux's weights for nice 10 and 0: 110, 1024).
SERIAL_NICE = 10
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
    parser.add_argument(
        "--postgres-beside",
        action="append",
        default=[],
        metavar="PATH",
        help="tests to run on PostgreSQL beside the Kafka tier, as --coverage runs them",
    )
    parser.add_argument(
        "--without-serial", action="store_true", help="leave out the tests marked serial"
    )
    options, args = parser.parse_known_args(argv)
    tiers = set(options.tiers.split(","))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    django.setup()
    pytest = [sys.executable, "-m", "pytest", *args]
    # A module to a worker, in the order tests/conftest.py gives them (the longest first). A
    # worker that crashes ends the run, red at once: replaced, its module's scheduling hung
    # until CI's time limit.
    parallel = [
        *pytest,
        "--dist=loadfile",
        "--no-loadscope-reorder",
        "--max-worker-restart=0",
    ]
    codes = []
    if "fast" in tiers:
        measured = COVERAGE if options.coverage else []
        workers = os.environ.get("ISTHMUS_TEST_WORKERS", "2")
        codes.append(subprocess.call([*parallel, "-n", workers, "-m", "not kafka", *measured]))
        if options.coverage and codes[-1] == 0:
            subprocess.call([sys.executable, "-m", "coverage", "report", *COVERED])
    if "kafka" in tiers:
        serial = not options.without_serial
        codes += _kafka_tier(pytest, parallel, serial, options.postgres_beside)
    failed = (rc for rc in codes if rc not in (0, NO_TESTS_COLLECTED))
    return next(failed, 0)


def _kafka_tier(
    pytest: list[str], parallel: list[str], serial: bool, beside: list[str]
) -> list[int]:
    """The fast tier of `beside` on PostgreSQL, then the Kafka tier in parallel workers, then
    the Kafka tests of `beside` on PostgreSQL; and beside them (unless not `serial`) the serial
    tests (`_serial_tests`). Their return codes."""
    from devstack.stack import Stack
    from tests.shared_stack import parts_of, shared_stack

    postgres_log = settings.VAR_DIR / "postgres-beside.log"
    stack = Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)
    with shared_stack(stack, parts_of(stack)), ThreadPoolExecutor(1) as lane:
        heavy_over = threading.Event()
        if serial:
            serial_codes = lane.submit(_serial_tests, pytest, heavy_over)
        else:
            heavy_over.set()
        codes = [_on_postgres(beside, "fast", postgres_log).wait()] if beside else []
        heavy_over.wait()  # the Kafka tier starts once both have ended
        tier = "kafka and not serial and not faults and not ha"  # (make test-faults, test-ha)
        workers = os.environ.get("ISTHMUS_KAFKA_TEST_WORKERS", "3")
        codes.append(subprocess.call([*parallel, "-n", workers, "-m", tier]))
        if beside:
            codes.append(_on_postgres(beside, "kafka", postgres_log).wait())
        if serial:
            codes += serial_codes.result()
    for ran, log, what in (
        (serial, _serial_log(), "The tests that stop brokers or Redis, on a stack of their own"),
        (beside, postgres_log, "On PostgreSQL"),
    ):
        if ran:
            print(f"\n{what} ({log}):\n{log.read_text(errors='replace')}", flush=True)
    return codes


def _serial_tests(pytest: list[str], heavy_over: threading.Event) -> list[int]:
    """The serial tests, one after another on a stack of their own, their output in
    var/serial-stack/pytest.log: those marked heavy (`heavy_over` set when they end), then the
    rest at SERIAL_NICE. Their return codes."""
    codes = []
    try:
        env = _serial_stack()
        with open(_serial_log(), "w") as out:

            def run(which: str, nice: int) -> int:
                marks = f"serial and {which} and not faults"
                command = ["nice", "-n", str(nice), *pytest, "-m", marks]
                return subprocess.call(command, env=env, stdout=out, stderr=subprocess.STDOUT)

            codes.append(run("heavy", 0))
            heavy_over.set()
            codes.append(run("not heavy", SERIAL_NICE))
    finally:
        heavy_over.set()  # even if the serial stack could not be made
    return codes


def _serial_stack() -> dict[str, str]:
    """The environment of the serial tests' stack (ports shifted, state in var/serial-stack/),
    its folder made ready."""
    env = {
        **os.environ,
        "ISTHMUS_DEVSTACK_PORT_OFFSET": SERIAL_PORT_OFFSET,
        "ISTHMUS_VAR_DIR": str(_serial_log().parent),
    }
    subprocess.run([sys.executable, "manage.py", "init_var", "-v", "0"], env=env, check=True)
    return env


def _serial_log() -> Path:
    return settings.VAR_DIR / "serial-stack" / "pytest.log"


def _on_postgres(paths: list[str], tier: str, log: Path) -> subprocess.Popen:
    """This suite again on PostgreSQL, one tier of `paths` (the fast one under coverage, or the
    Kafka one without the serial tests), its output appended to `log`."""
    env = {**os.environ, "ISTHMUS_DB": "postgres", "ISTHMUS_TEST_REDIS_DB": BESIDE_REDIS_DB}
    command = [sys.executable, "-m", "tests.suite", "--tiers", tier]
    command += ["--coverage"] if tier == "fast" else ["--without-serial"]
    with open(log, "w" if tier == "fast" else "a") as out:
        return subprocess.Popen([*command, *paths], env=env, stdout=out, stderr=subprocess.STDOUT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
