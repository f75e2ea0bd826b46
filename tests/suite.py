"""`make test`'s runner. The tests that stop brokers or Redis (marked `serial`) run one after
another on a second stack of their own (ports shifted by ISTHMUS_DEVSTACK_PORT_OFFSET, state in
var/serial-stack/), so no other test, and no `make demo` running beside, sees their outages.
(On two stacks at once, beside the others on 2 cores, two of them did not see their engine copy
within minutes.)
Beside them, on the embedded stack (which starts once for all of them), the others run in
parallel workers (pytest-xdist, a module to a worker). With ISTHMUS_TEST_COVERAGE set, the fast
tier (tests/unit and tests/db, no cluster) runs first under coverage.py, which reports the line
coverage of the cutover and mirror modules, then the tests that need the clusters, Spark or
Chromium (marked `kafka`): `make test` does so on its PostgreSQL run, which has the whole fast
tier. Each stack stops at the end if it was not up before.

    python -m tests.suite [pytest arguments, e.g. the test files to run]

ISTHMUS_TEST_WORKERS sets the number of parallel workers (default 2).
"""

from __future__ import annotations

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
        for name in ("mirrors", "links", "promote", "reverse", "restore", "offset_sync")
    )
]


def main(args: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    django.setup()
    from devstack.stack import Stack
    from tests.shared_stack import parts_of, shared_stack

    pytest = [sys.executable, "-m", "pytest", *args]
    workers = os.environ.get("ISTHMUS_TEST_WORKERS", "2")
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
        parallel = [*pytest, "-n", workers, "--dist=loadfile"]
        fast = 0
        if os.environ.get("ISTHMUS_TEST_COVERAGE"):  # the fast tier first, measured
            fast = subprocess.call([*parallel, "-m", "not kafka", *COVERAGE])
            if fast == 0:
                subprocess.call([sys.executable, "-m", "coverage", "report", *COVERED])
            slow = subprocess.call([*parallel, "-m", "kafka and not serial and not faults"])
        else:  # the fast tests fill the gaps where the others wait on brokers
            slow = subprocess.call([*parallel, "-m", "not serial and not faults"])
        alone.wait()
    print(f"\nThe tests that stop brokers or Redis, on a stack of their own ({serial_log}):")
    print(Path(serial_log).read_text(errors="replace"), flush=True)
    failed = (rc for rc in (fast, slow, alone.returncode) if rc not in (0, NO_TESTS_COLLECTED))
    return next(failed, 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
