"""How the Kafka admin adapter asks a cluster, and what a failure says: the errors every call
raises (`KafkaAdminError` and its kinds), librdkafka's words for a failed connection put in an
operator's, and `AdminRequests`, the base of each group of `KafkaAdmin`'s calls (topics and
configs, offsets, ACLs, consumer groups), which waits for a request and turns its failure into
those errors.
"""

from __future__ import annotations

import re
from collections import deque
from concurrent.futures import Future
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException

from .admin_client import AdminClient

Result = TypeVar("Result")
# What a client says when the cluster as a whole does not answer (a failed login included).
_UNREACHABLE = {
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._AUTHENTICATION,
}


class KafkaAdminError(Exception):
    """A cluster could not be reached or refused a request."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class Unreachable(KafkaAdminError):
    """The cluster did not answer (down, out of reach, or the login failed): any request to it
    fails alike, whatever it asks for."""


class InvalidClientConfig(KafkaAdminError):
    """librdkafka refuses a client setting (e.g. an unknown property, a missing CA file)."""


class TopicNotFound(KafkaAdminError):
    """The topic does not exist on that cluster."""


class AuthorizerDisabled(KafkaAdminError):
    """The cluster runs no authorizer, so it has no ACLs to set."""


# librdkafka's words for a connection that failed, and what they mean to an operator.
_CONNECTION_WORDS = [
    ("Connection refused", "nothing accepts connections at that address (connection refused)"),
    ("Failed to resolve", "the host name cannot be resolved (no such host)"),
    (
        "connecting to a PLAINTEXT broker listener",
        "the client speaks TLS (security.protocol) but that listener is plain text",
    ),
    (
        "SSL handshake failed",
        "the TLS handshake failed: check the trust store and the broker's certificate",
    ),
    (
        "in state APIVERSION_QUERY",
        "the broker closed the connection at once: is it a TLS or SASL listener, spoken to "
        "in plain text?",
    ),
    ("brokers are down", "no broker answered"),
]


def connection_words(detail: str, timeout: float) -> str | None:
    """What a connection failure in librdkafka's words means, in an operator's; None when the
    failure is not one of a connection (the client's own words then say it best)."""
    for clue, words in _CONNECTION_WORDS:
        if clue in detail:
            return words
    if "Timed out" in detail or "timed out" in detail:
        return f"no broker answered within {timeout:g} s"
    return None


def _without_client_noise(detail: str) -> str:
    """librdkafka's message without the connection it came from and the state it was in:
    "sasl_plaintext://h:9192/bootstrap: SASL authentication error: … (after 301ms in state
    AUTH_REQ)" → "SASL authentication error: …"."""
    detail = re.sub(r"^\S+://\S+/(?:bootstrap|\d+): ", "", detail)
    return re.sub(r" \(after \d+ms in state \w+\)", "", detail)


class AdminRequests:
    """What each group of `KafkaAdmin`'s calls shares: its client (made by `KafkaAdmin`), a
    request waited for, and a failure said in an operator's words."""

    _client: AdminClient
    bootstrap: str
    timeout: float
    _client_errors: deque[KafkaError]
    failed: bool

    def clear_client_errors(self) -> None:
        """Take the client's queued errors and forget them: a reused client's next failure is
        then explained by what happened since, not by an old disconnection."""
        self._client.poll(0)
        self._client_errors.clear()

    def _fail(self, doing: str, exc: Exception) -> KafkaAdminError:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        # A failed login shows up on the request as a timeout; the client's own error says why.
        self.failed = True
        self._client.poll(0)
        recent = list(self._client_errors)
        auth_errors = [e for e in recent if e.code() == KafkaError._AUTHENTICATION]
        if auth_errors:
            error = auth_errors[-1]
        if error is not None:
            detail = error.str()
        elif isinstance(exc, TimeoutError):  # no answer within our own wait
            detail = "Timed out"
        else:
            detail = str(exc) or type(exc).__name__
        if recent and recent[-1] is not error:
            detail += f"; last connection error: {recent[-1].str()}"
        if not auth_errors:
            detail = connection_words(detail, self.timeout) or detail
        detail = _without_client_noise(detail)
        whole = error is None or error.code() in _UNREACHABLE  # None: the request timed out
        hint = ""
        if error and error.code() == KafkaError._AUTHENTICATION:
            hint = " Check the SASL/SSL settings and credentials in the client config."
        elif whole:
            hint = " Check that the brokers are running and that bootstrap.servers is right."
        return (Unreachable if whole else KafkaAdminError)(
            f"Could not {doing} at {self.bootstrap}: {detail}.{hint}",
            code=error.code() if error else None,
        )

    def _wait(self, future: Future[Result], doing: str) -> Result:
        try:
            return future.result(timeout=self.timeout + 1)
        except (KafkaException, TimeoutError) as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise TopicNotFound(f"Could not {doing}: no such topic.") from exc
            if error is not None and error.code() == KafkaError.SECURITY_DISABLED:
                raise AuthorizerDisabled(
                    f"Could not {doing}: the cluster has no authorizer."
                ) from exc
            raise self._fail(doing, exc) from exc
