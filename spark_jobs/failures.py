"""A failure in words for the console: one line, whatever raised it (a task's Python error, or
the JVM's through Py4J). The engine's driver and each link's runner word their failures so;
`spark_jobs.link_runner.one_line` names it too, as before."""

from __future__ import annotations

import re

_JAVA_ERROR = re.compile(r"^: (?:[a-z]\w*\.)+[A-Z]\w*: (?:\[\w+\] )?(.*)$")


def one_line(error: BaseException) -> str:
    """A failure in one line: the Python error of a task, else the Java exception's own
    message, not the JVM's trace."""
    text = str(error)
    if "Python worker exited unexpectedly" in text:
        return "a copier slot's Python worker died (killed, or out of memory)"
    lines = text.splitlines()
    python = (
        "RuntimeError:",
        "KafkaException:",
        "Exception:",
        "ModuleNotFoundError:",
        "ImportError:",
    )
    for line in lines:
        if line.startswith(python):
            return line
    for i, line in enumerate(lines):
        if java := _JAVA_ERROR.match(line):  # Py4J: ": org.apache.X: [CLASS] message", then more
            more = [m.strip() for m in lines[i + 1 : i + 3] if m.strip() and not m.startswith("\t")]
            return re.sub(r"\s*SQLSTATE: \w+", "", " ".join([java[1], *more]))
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
