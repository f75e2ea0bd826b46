"""A cluster that cannot be reached is explained in an operator's words, not librdkafka's."""

import pytest

from infra.kafka_errors import _without_client_noise, connection_words

WAITED = "Failed while waiting for controller: Local: Timed out; last connection error: "


@pytest.mark.parametrize(
    "detail,words",
    [
        (
            WAITED + "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection "
            "refused (after 0ms in state CONNECT)",
            "nothing accepts connections at that address (connection refused)",
        ),
        (
            WAITED + "no-such-host.invalid:9092/bootstrap: Failed to resolve "
            "'no-such-host.invalid:9092': Name or service not known (after 2ms in state CONNECT)",
            "the host name cannot be resolved (no such host)",
        ),
        (
            WAITED + "ssl://127.0.0.1:9092/bootstrap: SSL handshake failed: Disconnected: SSL "
            "connection closed by peer: connecting to a PLAINTEXT broker listener? (after 1ms "
            "in state SSL_HANDSHAKE)",
            "the client speaks TLS (security.protocol) but that listener is plain text",
        ),
        (WAITED + "1/1 brokers are down", "no broker answered"),
        ("Failed while waiting for controller: Local: Timed out", "no broker answered within 5 s"),
    ],
)
def test_a_connection_failure_is_said_in_words(detail, words):
    assert connection_words(detail, 5.0) == words


def test_other_failures_keep_the_clients_words_without_where_and_when():
    auth = (
        "sasl_plaintext://127.0.0.1:9192/bootstrap: SASL authentication error: Authentication "
        "failed: Invalid username or password (after 301ms in state AUTH_REQ)"
    )
    assert connection_words(auth, 5.0) is None
    assert _without_client_noise(auth) == (
        "SASL authentication error: Authentication failed: Invalid username or password"
    )
