"""The one error type of link and mirror operations.

Its message says what was wrong and what to do; `status` tells an API how to answer
(400 bad input, 404 not found, 409 wrong state or name taken, 503 a cluster did not answer).
"""

from __future__ import annotations


class ReplicationError(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def not_found(message: str) -> ReplicationError:
    return ReplicationError(message, 404)


def conflict(message: str) -> ReplicationError:
    return ReplicationError(message, 409)


def unavailable(message: str) -> ReplicationError:
    return ReplicationError(message, 503)


class FieldProblems(ReplicationError):
    """Several things wrong with one request, each said for the input it is about (a form
    shows each under its field; an API answers them in one message). The status is the first
    problem's."""

    def __init__(self, problems: dict[str, ReplicationError]):
        super().__init__(
            " ".join(str(p) for p in problems.values()), next(iter(problems.values())).status
        )
        self.problems = {field: str(problem) for field, problem in problems.items()}

    @classmethod
    def one(cls, field: str, message: str, status: int = 400) -> FieldProblems:
        return cls({field: ReplicationError(message, status)})
