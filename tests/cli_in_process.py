"""Isthmus's command-line tools run in the test's own process: bin/TOOL's module's main(),
its output captured, its Kafka client answered by the in-memory clusters (tests/memory_kafka.py).
The database tests use it to check what the tools print and refuse without a broker; as
processes of their own, against real clusters, the tools are tests/integration's."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import subprocess
from pathlib import Path

import pytest

from isthmus_cli import common
from tests.memory_kafka import MemoryAdmin

BIN = Path(__file__).resolve().parent.parent / "bin"


def run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> subprocess.CompletedProcess:
    """Run `argv` (bin/'s tool name first) as its process would: its exit status, stdout and
    stderr. The environment is the test's (ISTHMUS_URL, ISTHMUS_TOKEN...)."""
    tool, *args = argv
    module = re.search(r"isthmus-run\" (\w+)", (BIN / tool).read_text())[1]
    main = importlib.import_module(f"isthmus_cli.{module}").main
    monkeypatch.setattr(common, "KafkaAdmin", MemoryAdmin)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as exc:  # argparse refusing the arguments, or a tool's exit
            status = exc.code if isinstance(exc.code, int) or exc.code is None else 1
            if isinstance(exc.code, str):
                print(exc.code, file=err)  # as the interpreter prints it
    return subprocess.CompletedProcess(argv, status or 0, out.getvalue(), err.getvalue())
