"""Kafka client settings by their Java names (as Kafka's own tools, a `--command-config` file
and Cluster Linking's configs spell them) made into librdkafka's, for confluent-kafka."""

from __future__ import annotations

import re

_JAAS_MODULE = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
# The login modules a client can take a username and password from, and their mechanisms.
LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}
# Kafka's names of SSL client settings, and librdkafka's for them.
_SSL_RENAMES = {
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.location": "ssl.keystore.location",
    "ssl.keystore.password": "ssl.keystore.password",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.key.password": "ssl.key.password",
}


def parse_jaas(line: str) -> tuple[str, str, str]:
    """(login module, username, password) of a PLAIN or SCRAM `sasl.jaas.config` line; a
    ValueError says what is wrong with any other."""
    module = _JAAS_MODULE.match(line)
    if not module or module.group(1) not in LOGIN_MODULES:
        raise ValueError(
            "must use PlainLoginModule or ScramLoginModule, e.g. "
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="u" password="p";'
        )
    options = dict(_JAAS_OPTION.findall(line))
    if "username" not in options or "password" not in options:
        raise ValueError('needs username="..." and password="..."')
    return module.group(1), options["username"], options["password"]


def librdkafka_config(settings: dict[str, str]) -> dict[str, str]:
    """librdkafka settings from Java-named ones: bootstrap, security protocol, SASL and SSL;
    others are left out. A ValueError says what is missing or wrong."""
    client = {"bootstrap.servers": settings["bootstrap.servers"]}
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    client["security.protocol"] = protocol
    if protocol.startswith("SASL"):
        client["sasl.mechanism"] = settings.get("sasl.mechanism", "PLAIN").upper()
        if "sasl.jaas.config" in settings:
            try:
                _, username, password = parse_jaas(settings["sasl.jaas.config"])
            except ValueError as exc:
                raise ValueError(f"sasl.jaas.config {exc}.") from None
            client["sasl.username"], client["sasl.password"] = username, password
        elif "sasl.username" in settings and "sasl.password" in settings:
            client["sasl.username"] = settings["sasl.username"]
            client["sasl.password"] = settings["sasl.password"]
        else:
            raise ValueError(
                f"security.protocol={protocol} needs sasl.jaas.config, or sasl.username and "
                "sasl.password."
            )
    for name, librdkafka_name in _SSL_RENAMES.items():
        if name in settings:
            client[librdkafka_name] = settings[name]
    if "ssl.endpoint.identification.algorithm" in settings:
        client["ssl.endpoint.identification.algorithm"] = (
            settings["ssl.endpoint.identification.algorithm"].lower() or "none"
        )
    return client


def principal(settings: dict[str, str]) -> str:
    """The Kafka principal a client with these settings (Java or librdkafka names) is, as far
    as its settings say: User:<name> over SASL, the certificate's subject over mutual TLS,
    User:ANONYMOUS otherwise."""
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol.startswith("SASL"):
        if "sasl.username" in settings:
            return f"User:{settings['sasl.username']}"
        try:
            return f"User:{parse_jaas(settings.get('sasl.jaas.config', ''))[1]}"
        except ValueError:
            return "unknown"
    if protocol == "SSL" and any(
        k in settings
        for k in ("ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.certificate.pem")
    ):
        return "the subject of its TLS certificate"
    return "User:ANONYMOUS"
