"""The console's server-drawn charts: samples placed by time over the window and scaled to
their peak; a gap in the samples breaks the line; old samples fall out of the window."""

from console.charts import HEIGHT, WIDTH, chart
from replication.history import SAMPLE_S, WINDOW_S, Sample

NOW = 1_000_000.0


def _points(line: str) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in line.split()]


def test_samples_are_placed_by_their_time_and_scaled_to_the_peak():
    samples = [Sample(NOW - 2 * SAMPLE_S, 50.0), Sample(NOW - SAMPLE_S, 100.0), Sample(NOW, 0.0)]
    c = chart("Copied", "records/s", samples, now=NOW)
    [line] = c.lines
    (x1, y1), (x2, y2), (x3, y3) = _points(line)
    assert x1 == round(WIDTH * (1 - 2 * SAMPLE_S / WINDOW_S), 1) and x1 < x2 < x3 == WIDTH
    assert y3 == HEIGHT - 2 and y2 < y1 < y3  # higher values are drawn higher
    assert (c.latest, c.peak, c.samples, c.empty) == (0.0, 100.0, 3, False)


def test_a_gap_in_the_samples_breaks_the_line_and_a_lone_sample_still_shows():
    samples = [Sample(NOW - 300, 1.0), Sample(NOW - 290, 2.0), Sample(NOW - 10, 3.0)]
    c = chart("Lag", "records", samples, now=NOW)
    assert len(c.lines) == 2
    assert len(_points(c.lines[1])) == 2  # the lone sample drawn as a short dash


def test_samples_older_than_the_window_are_left_out_and_none_is_empty():
    old = chart("Lag", "records", [Sample(NOW - WINDOW_S - 1, 5.0)], now=NOW)
    assert old.empty and old.lines == [] and old.latest is None
    flat = chart("Lag", "records", [Sample(NOW - 10, 0.0), Sample(NOW, 0.0)], now=NOW)
    assert all(y == HEIGHT - 2 for _, y in _points(flat.lines[0]))
