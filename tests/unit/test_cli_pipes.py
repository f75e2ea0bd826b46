"""A tool's output piped into a reader that stops early (`kafka-mirrors --describe | head`)."""

from __future__ import annotations

import subprocess
import sys

from django.conf import settings

TOOL = """
from isthmus_cli import common

@common.run
def main(argv=None):
    for i in range(200_000):
        print(f"Topic: mirror-{i}\\tState: ACTIVE")
    return 0

raise SystemExit(main())
"""


def test_a_reader_that_stops_early_ends_the_tool_quietly_without_a_traceback():
    tool = subprocess.Popen(
        [sys.executable, "-c", TOOL],
        cwd=settings.BASE_DIR / "cli",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = tool.stdout.readline()
    tool.stdout.close()  # as `head -1` does once it has its line
    _, errors = tool.communicate(timeout=60)

    assert first == b"Topic: mirror-0\tState: ACTIVE\n"
    assert errors == b"", errors.decode()
    assert tool.returncode == 141  # 128 + SIGPIPE, as a tool the pipe killed
