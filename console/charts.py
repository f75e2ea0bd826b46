"""Small line charts drawn on the server as SVG: a series of samples over the last
`history.WINDOW_S` seconds, scaled to its own peak. No script, nothing to load."""

from __future__ import annotations

import time
from dataclasses import dataclass

from replication.history import SAMPLE_S, WINDOW_S, Sample

WIDTH, HEIGHT = 320, 64


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    lines: list[str]  # polyline point lists: a gap in the samples starts a new line
    latest: float | None
    peak: float
    samples: int
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def empty(self) -> bool:
        return not self.samples


def chart(title: str, unit: str, samples: list[Sample], now: float | None = None) -> Chart:
    now = now or time.time()
    shown = [s for s in samples if now - s.at <= WINDOW_S]
    peak = max((s.value for s in shown), default=0.0)
    top = peak * 1.1 or 1.0  # a flat zero line sits at the bottom, not in the middle

    def point(s: Sample) -> str:
        x = WIDTH * (1 - (now - s.at) / WINDOW_S)
        y = HEIGHT - 2 - (HEIGHT - 4) * s.value / top
        return f"{x:.1f},{y:.1f}"

    lines: list[list[str]] = []
    previous = None
    for s in shown:
        if previous is None or s.at - previous > 2.5 * SAMPLE_S:
            lines.append([])
        lines[-1].append(point(s))
        previous = s.at
    for line in lines:
        if len(line) == 1:  # one sample: a short dash, so it shows
            x, y = line[0].split(",")
            line.insert(0, f"{max(0.0, float(x) - 3):.1f},{y}")
    return Chart(
        title,
        unit,
        [" ".join(line) for line in lines],
        shown[-1].value if shown else None,
        peak,
        len(shown),
    )
