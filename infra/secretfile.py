"""Small secret files under var/: created once, owner-only, safe against two creators at once."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def read_or_create(path: Path, make: Callable[[], str]) -> str:
    """The content of `path`, writing `make()` there first (mode 0600) if it does not exist."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process is creating it; read what it wrote below
        else:
            with os.fdopen(fd, "w") as f:
                f.write(make())
    for _ in range(50):  # a concurrent creator may not have finished writing yet
        content = path.read_text().strip()
        if content:
            return content
        time.sleep(0.1)
    raise RuntimeError(f"{path} is empty; delete it and try again.")
