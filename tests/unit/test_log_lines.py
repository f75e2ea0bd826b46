"""A log line shows what users typed inertly: a line break or an escape sequence in a name or
URL neither forges a line of its own in a log file nor acts on the terminal that shows it."""

from __future__ import annotations

import io
import logging

from console.log_filters import InertLogRecord, make_log_records_inert


def test_the_settings_make_every_record_of_the_process_inert():
    assert logging.getLogRecordFactory() is InertLogRecord  # console.settings installed it


def test_a_value_holding_a_line_break_and_escapes_stays_on_its_own_log_line():
    make_log_records_inert()
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("tests.log_lines")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        url = "http://r.example:8081\n2026-11-28 12:00:00 INFO audit: admin granted\x1b[2J\u202e"
        logger.warning("Cluster %s: schema registry at %s", "east", url)
    finally:
        logger.removeHandler(handler)

    lines = out.getvalue().splitlines()
    assert lines == [
        "WARNING tests.log_lines: Cluster east: schema registry at http://r.example:8081\\n"
        "2026-11-28 12:00:00 INFO audit: admin granted\\x1b[2J\\u202e"
    ]


def test_a_traceback_keeps_its_lines():
    make_log_records_inert()
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("tests.log_lines.traceback")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert out.getvalue().startswith("failed\nTraceback (most recent call last):\n")
