"""The console's server-drawn charts: samples placed by time over the range shown and scaled
to a round number above their peak; a gap in the samples breaks the line; old samples fall out
of the range; the axes carry UTC clock times and values."""

from console.charts import HEIGHT, LEFT, PLOT_W, TOP, WIDTH, chart
from replication.observe.history import COARSE_S, RANGES, SAMPLE_S, Sample, _with_unsummed

NOW = 1_000_000.0  # 13:46:40 UTC
BOTTOM = HEIGHT - 22


def _points(line: str) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in line.split()]


def test_samples_are_placed_by_their_time_and_scaled_to_a_round_top_above_the_peak():
    samples = [Sample(NOW - 2 * SAMPLE_S, 50.0), Sample(NOW - SAMPLE_S, 100.0), Sample(NOW, 0.0)]
    c = chart("Copied", "records/s", samples, "15m", now=NOW)
    [line] = c.lines
    (x1, y1), (x2, y2), (x3, y3) = _points(line)
    assert x1 == round(LEFT + PLOT_W * (1 - 2 * SAMPLE_S / 900), 1) and x1 < x2 < x3
    assert x3 == WIDTH - 8
    assert y3 == BOTTOM and y2 == TOP and y2 < y1 < y3  # 100 is the top: higher is drawn higher
    assert (c.latest, c.peak, c.samples, c.empty) == (0.0, 100.0, 3, False)
    assert [t.label for t in c.y_ticks] == ["0", "50", "100"]


def test_the_value_axis_tops_at_a_round_number_in_short_units():
    c = chart("Lag", "records", [Sample(NOW, 218_000.0)], "15m", now=NOW)
    assert [t.label for t in c.y_ticks] == ["0", "125k", "250k"]
    flat = chart("Lag", "records", [Sample(NOW - 10, 0.0), Sample(NOW, 0.0)], "15m", now=NOW)
    assert all(y == BOTTOM for _, y in _points(flat.lines[0]))


def test_the_time_axis_shows_utc_clock_times_at_steps_fitting_the_range():
    assert [t.label for t in chart("Lag", "records", [], "15m", now=NOW).x_ticks] == [
        "13:35",
        "13:40",
        "13:45",
    ]
    hour = chart("Lag", "records", [], "1h", now=NOW).x_ticks
    assert [t.label for t in hour] == ["13:00", "13:15", "13:30", "13:45"]
    day = chart("Lag", "records", [], "24h", now=NOW).x_ticks
    assert [t.label for t in day][:2] == ["16:00", "20:00"] and len(day) == 6
    assert all(LEFT <= t.at <= WIDTH - 8 for t in hour + day)


def test_charts_of_one_range_line_up_whatever_their_samples():
    a = chart("Lag", "records", [Sample(NOW - 100, 5.0)], "1h", now=NOW)
    b = chart("Largest", "records", [Sample(NOW - 3000, 1e6)], "1h", now=NOW)
    assert a.x_ticks == b.x_ticks and (a.width, a.height) == (b.width, b.height)


def test_a_gap_in_the_samples_breaks_the_line_and_a_lone_sample_still_shows():
    samples = [Sample(NOW - 300, 1.0), Sample(NOW - 290, 2.0), Sample(NOW - 10, 3.0)]
    c = chart("Lag", "records", samples, "15m", now=NOW)
    assert len(c.lines) == 2
    assert len(_points(c.lines[1])) == 2  # the lone sample drawn as a short dash
    # A day's points are five minutes apart: that is no gap there.
    day = [Sample(NOW - 600, 1.0), Sample(NOW - 300, 2.0), Sample(NOW, 3.0)]
    assert len(chart("Lag", "records", day, "24h", now=NOW).lines) == 1


def test_samples_older_than_the_range_are_left_out_and_none_is_empty():
    window_s = RANGES["15m"][0]
    old = chart("Lag", "records", [Sample(NOW - window_s - 1, 5.0)], "15m", now=NOW)
    assert old.empty and old.lines == [] and old.latest is None
    assert not chart("Lag", "records", [Sample(NOW - window_s - 1, 5.0)], "1h", now=NOW).empty


def test_a_days_chart_keeps_the_readings_not_yet_summed_up_and_their_peak():
    """The day's chart is drawn from 5-minute points summed up once their period ends; the
    readings since (the period under way, and one ended but not summed up yet) are summed up
    the same way for the chart, so its peak and its end are today's, not minutes ago."""
    period = int(NOW // COARSE_S) * COARSE_S  # the period under way began here
    coarse = [{"t": period - COARSE_S, "lag": 5, "records_per_sec": 2.0}]
    fine = [
        {"t": period - COARSE_S - SAMPLE_S, "lag": 99},  # summed up already: not again
        {"t": period - 2 * SAMPLE_S, "lag": 40, "records_per_sec": 1.0},  # ended, not summed
        {"t": period - SAMPLE_S, "lag": 10, "records_per_sec": 3.0},
        {"t": period + SAMPLE_S, "lag": 700, "records_per_sec": 4.0},  # under way
        {"t": period + 2 * SAMPLE_S, "lag": 0, "records_per_sec": 6.0},
    ]
    points = _with_unsummed(coarse, fine, now=period + 2 * SAMPLE_S)
    assert points == [
        {"t": period - COARSE_S, "lag": 5, "records_per_sec": 2.0},
        {"t": period, "lag": 40, "records_per_sec": 2.0},  # the worst lag, the mean rate
        {"t": period + 2 * SAMPLE_S, "lag": 700, "records_per_sec": 5.0},  # at its last point
    ]
    samples = [Sample(p["t"], p["lag"]) for p in points]
    assert chart("Lag", "records", samples, "24h", now=period + 2 * SAMPLE_S).peak == 700
