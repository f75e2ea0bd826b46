"""Filters for the LOGGING setting. Imported while logging is set up, before Django's apps are:
nothing here may import a model (so not console.middleware, which imports the API's)."""

from __future__ import annotations

import logging

from replication.core.text import escaped


class OneLineFor4xx(logging.Filter):
    """A request refused with a 4xx (a host not served, a role that may not, a CSRF failure, a
    malformed body) is the client's mistake, not the console's: Django logs some of them as
    errors with the exception's traceback; this makes them one warning line, with the
    exception's message. (A handler's filter; 5xx keep their traceback.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if not isinstance(status, int) or not 400 <= status < 500:
            return True
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = record.getMessage()
            if str(exc) and str(exc) not in message:
                message = f"{message} ({exc})"
            record.msg, record.args = message, ()
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class InertLogRecord(logging.LogRecord):
    """A log record whose message shows control characters as escapes (`\\n`, `\\x1b`): a
    name or URL someone typed can neither forge a line of its own in a log file nor act on the
    terminal that shows it. Tracebacks, which the formatter adds after the message, keep their
    lines."""

    def getMessage(self) -> str:  # noqa: N802 (logging's name)
        return escaped(super().getMessage())


def make_log_records_inert() -> None:
    """Every record of this process (the console's, Celery's, the web server's) is inert."""
    logging.setLogRecordFactory(InertLogRecord)
