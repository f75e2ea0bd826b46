"""What the measurements need from a replication engine (Isthmus, its merge flows, or
MirrorMaker 2)."""

from __future__ import annotations

import subprocess
from typing import Protocol


class Engine(Protocol):
    name: str
    # Whether `add_mirrors` reaches a running engine (Isthmus: a new mirror set in Redis).
    adds_mirrors_live: bool

    def mirror_name(self, source_topic: str) -> str:
        """The destination topic the engine copies `source_topic` into."""

    def settings(self) -> dict[str, str]:
        """The engine's settings, for the report."""

    def prepare(self, mirrors: dict[str, str], partitions: int) -> None:
        """Make the destination topics of `mirrors` (mirror name -> source name)."""

    def start(self, mirrors: dict[str, str], tag: str) -> subprocess.Popen:
        """Start copying `mirrors`; `tag` names the run's log and work files."""

    def copied(self, ends: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """How far each destination partition in `ends` is copied, in source offsets (a mirror:
        its end offset; a merge flow, whose offsets differ: its committed progress)."""

    def add_mirrors(self, mirrors: dict[str, str]) -> None:
        """Have the running engine copy `mirrors` too, without a restart."""

    def error(self) -> str | None:
        """Why the engine says it failed, if it reports that; else None."""

    def stop(self) -> None:
        """Stop the engine and remove what it left behind."""
