"""Line charts drawn on the server as SVG: a series of samples over one of
`history.RANGES`, with a time axis (UTC clock times) and a value axis from 0 to a round
number above the peak. Every chart of a range has the same size and time axis, so charts
stacked on a page line up. No script, nothing to load."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from replication.observe.history import RANGES, Sample

WIDTH, HEIGHT = 640, 150
LEFT, RIGHT, TOP, BOTTOM = 56, 8, 8, 22  # margins for the axes' labels
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
# range: seconds between the time axis' ticks
_TICK_S = {"15m": 300, "1h": 900, "24h": 4 * 3600}
RANGE_WORDS = {"15m": "last 15 minutes", "1h": "last hour", "24h": "last 24 hours"}


@dataclass(frozen=True)
class Tick:
    at: float  # x or y in the SVG
    label: str


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    lines: list[str]  # polyline point lists: a gap in the samples starts a new line
    latest: float | None
    peak: float
    samples: int
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    shown: str  # the range's name
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    right: int = WIDTH - RIGHT

    @property
    def empty(self) -> bool:
        return not self.samples

    @property
    def range_words(self) -> str:
        return RANGE_WORDS[self.shown]


def chart(
    title: str, unit: str, samples: list[Sample], shown: str = "15m", now: float | None = None
) -> Chart:
    window_s, step_s = RANGES[shown]
    now = now or time.time()
    start = now - window_s
    shown_samples = [s for s in samples if start <= s.at <= now]
    peak = max((s.value for s in shown_samples), default=0.0)
    top = _round_up(peak)

    def x(at: float) -> float:
        return LEFT + PLOT_W * (at - start) / window_s

    def y(value: float) -> float:
        return TOP + PLOT_H * (1 - value / top)

    lines: list[list[str]] = []
    previous = None
    for s in shown_samples:
        if previous is None or s.at - previous > 2.5 * step_s:
            lines.append([])
        lines[-1].append(f"{x(s.at):.1f},{y(s.value):.1f}")
        previous = s.at
    for line in lines:
        if len(line) == 1:  # one sample: a short dash, so it shows
            px, py = line[0].split(",")
            line.insert(0, f"{max(LEFT, float(px) - 3):.1f},{py}")
    tick_s = _TICK_S[shown]
    first_tick = math.ceil(start / tick_s) * tick_s
    x_ticks = [
        Tick(round(x(t), 1), datetime.fromtimestamp(t, UTC).strftime("%H:%M"))
        for t in range(int(first_tick), int(now) + 1, tick_s)
    ]
    y_ticks = [Tick(round(y(v), 1), _short(v)) for v in (0, top / 2, top)]
    return Chart(
        title,
        unit,
        [" ".join(line) for line in lines],
        shown_samples[-1].value if shown_samples else None,
        peak,
        len(shown_samples),
        x_ticks,
        y_ticks,
        shown,
    )


def _round_up(peak: float) -> float:
    """The value axis' top: 1, 2, 2.5 or 5 times a power of ten, at or above the peak (1 for
    a flat zero, so it sits at the bottom)."""
    if peak <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(peak))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= peak)


def _short(value: float) -> str:
    """An axis label: 2500 → "2.5k", 1200000 → "1.2M"."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"
