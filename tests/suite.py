"""`make test`'s runner: the tests that share nothing run in parallel (pytest-xdist, a module to a
worker), then those that stop shared brokers or Redis (marked `serial`) run alone, so no other
test sees the outage. The clusters and Redis start once for both and stop at the end if they were
not up before (they may be a user's `make demo`).

    python -m tests.suite [pytest arguments, e.g. the test files to run]

ISTHMUS_TEST_WORKERS sets the number of parallel workers (default 2).
"""

from __future__ import annotations

import os
import subprocess
import sys

import django
from django.conf import settings

NO_TESTS_COLLECTED = 5


def main(args: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    django.setup()
    from devstack.stack import Stack
    from tests.shared_stack import parts_of, shared_stack

    workers = os.environ.get("ISTHMUS_TEST_WORKERS", "2")
    pytest = [sys.executable, "-m", "pytest", *args]
    stack = Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)
    with shared_stack(stack, parts_of(stack)):
        parallel = subprocess.call([*pytest, "-n", workers, "--dist=loadfile", "-m", "not serial"])
        alone = subprocess.call([*pytest, "-m", "serial"])
    return next((rc for rc in (parallel, alone) if rc not in (0, NO_TESTS_COLLECTED)), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
