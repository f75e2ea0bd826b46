"""Sections of docs/benchmarks.md that a benchmark of its own writes (offset sync, list pages):
each between its own markers, replaced in place, and kept when `bench.run` rewrites the rest."""

from __future__ import annotations

import re

from .cluster import ROOT, log

DOC = ROOT / "docs" / "benchmarks.md"


class Section:
    def __init__(self, name: str):
        self.begin, self.end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
        self.name = name
        self._pattern = re.compile(re.escape(self.begin) + ".*?" + re.escape(self.end), re.DOTALL)

    def wrap(self, text: str) -> str:
        return f"{self.begin}\n{text.strip()}\n{self.end}"

    def put(self, doc: str, text: str) -> str:
        """`doc` with this section replaced by `text` (appended if it has none)."""
        if self._pattern.search(doc):
            return self._pattern.sub(lambda _: self.wrap(text), doc)
        return doc.rstrip() + "\n\n" + self.wrap(text) + "\n"

    def keep(self, old: str, new: str) -> str:
        """The document `new`, with this section as `old` has it."""
        found = self._pattern.search(old)
        if found is None:
            return new
        return self.put(new, found.group(0)[len(self.begin) : -len(self.end)])

    def write(self, text: str) -> None:
        DOC.write_text(self.put(DOC.read_text() if DOC.exists() else "# Benchmarks\n", text))
        log(f"Wrote the {self.name} section of {DOC}")


OFFSET_SYNC = Section("offset-sync")
LIST_PAGES = Section("list-pages")
FAILBACK = Section("failback")
LINK_SCALE = Section("link-scale")
BULK_FAILOVER = Section("bulk-failover")
SOAK = Section("soak")
MERGE_FLOWS = Section("merge-flows")
SCHEMA_SYNC = Section("schema-sync")
CLUSTER_SCALE = Section("cluster-scale")
GATEWAY = Section("gateway")
BATCH_PATH = Section("batch-path")
BATCH_ENGINE = Section("batch-engine")
SECTIONS = [
    OFFSET_SYNC,
    LIST_PAGES,
    FAILBACK,
    LINK_SCALE,
    BULK_FAILOVER,
    SOAK,
    MERGE_FLOWS,
    SCHEMA_SYNC,
    CLUSTER_SCALE,
    GATEWAY,
    BATCH_PATH,
    BATCH_ENGINE,
]


def keep_all(old: str, new: str) -> str:
    """The document `bench.run` writes (`new`), with the other benchmarks' sections of `old`."""
    for section in SECTIONS:
        new = section.keep(old, new)
    return new
