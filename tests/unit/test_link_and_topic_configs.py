"""Pure logic: link config checks and the source-connection translation, and topic configs by
class. (Their effect on real clusters is proven in tests/integration.)"""

from pathlib import Path

import pytest

from infra.client_config import librdkafka_config
from infra.kafka_topics import ConfigValue
from replication.core import link_config_validation, topic_configs
from replication.core.errors import ReplicationError

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="link" password="p\\"w";'
)


def test_a_jaas_login_becomes_librdkafka_credentials(settings):
    ca = str(Path(settings.TLS_FILES_DIR) / "ca.pem")
    config = link_config_validation.validate(
        {
            "bootstrap.servers": "b:9096",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": JAAS,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca,
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert librdkafka_config(config) == {
        "bootstrap.servers": "b:9096",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "link",
        "sasl.password": 'p\\"w',
        "ssl.ca.location": ca,
        "ssl.endpoint.identification.algorithm": "none",
    }


@pytest.mark.parametrize(
    "configs,expected",
    [
        ({"security.protocol": "SASL_SSL", "sasl.jaas.config": JAAS}, "does not fit"),
        ({"security.protocol": "SASL_SSL", "sasl.jaas.config": "x required;"}, "PlainLoginModule"),
        ({"sasl.username": "u"}, "security.protocol is PLAINTEXT"),
        ({"ssl.truststore.type": "JKS", "security.protocol": "SSL"}, "can only be PEM"),
        ({"ssl.keystore.key": "k"}, "set security.protocol=SSL or SASL_SSL"),
        ({"mirror.start.offset.spec": "2026-11-21T09:00:00"}, "needs a time zone"),
        ({"availability.check.consecutive.failure.threshold": "0"}, "from 1 to 2147483647"),
        ({"connection.mode": "SIDEWAYS"}, "connection.mode can only be OUTBOUND or INBOUND"),
        (
            {"connection.mode": "INBOUND", "link.mode": "BIDIRECTIONAL"},
            "connection.mode=INBOUND is a source-initiated link's destination half",
        ),
        ({"schema.subjects": "a*b"}, "a \\* may only end a name"),
        ({"schema.subjects": " , "}, "names no subject"),
        ({"schema.context": "dc 1"}, "may hold only letters"),
    ],
)
def test_configs_that_do_not_fit_together_are_refused(configs, expected):
    with pytest.raises(ReplicationError, match=expected):
        link_config_validation.validate({"bootstrap.servers": "b:9092", **configs})


def test_good_values_are_normalised():
    config = link_config_validation.validate(
        {
            "bootstrap.servers": " b:9092 ",
            "cluster.link.paused": "TRUE",
            "mirror.start.offset.spec": "2026-11-21T09:00:00Z",
            "topic.config.sync.include": "retention.ms, segment.ms",
            "schema.subjects": "orders-value, payments.* ,",
        }
    )
    assert config == {
        "bootstrap.servers": "b:9092",
        "cluster.link.paused": "true",
        "mirror.start.offset.spec": "2026-11-21T09:00:00Z",
        "topic.config.sync.include": "retention.ms,segment.ms",
        "schema.subjects": "orders-value,payments.*",
    }


def source(**values: tuple[str, bool]) -> dict[str, ConfigValue]:
    return {k.replace("_", "."): ConfigValue(*v) for k, v in values.items()}


SOURCE = source(
    cleanup_policy=("delete", False),
    max_message_bytes=("1048588", False),
    retention_ms=("123456890", True),
    segment_ms=("604800000", False),
    retention_bytes=("1000", True),
)


def test_strictly_mirrored_always_synced_only_when_set_and_overrides_win():
    wanted = topic_configs.desired(SOURCE, None, {"retention.bytes": "5"})
    assert wanted == {
        "cleanup.policy": "delete",
        "max.message.bytes": "1048588",
        "retention.ms": "123456890",
        "retention.bytes": "5",
    }


def test_the_include_list_limits_what_is_synced():
    assert "retention.ms" not in topic_configs.desired(SOURCE, "segment.ms", {})
    assert topic_configs.synced_names("retention.ms", {}) == topic_configs.STRICTLY_MIRRORED | {
        "retention.ms"
    }


def test_changes_set_what_differs_and_reset_what_the_source_dropped():
    managed = topic_configs.synced_names(None, {"retention.bytes": "5"})
    to_set, to_delete = topic_configs.changes(
        {"cleanup.policy": "delete", "retention.ms": "1", "retention.bytes": "5"},
        {"cleanup.policy": "delete", "segment.ms": "9", "retention.bytes": "5", "x.y": "1"},
        managed,
    )
    # retention.bytes is an override (unmanaged), x.y is independent: neither is touched.
    assert (to_set, to_delete) == ({"retention.ms": "1"}, ["segment.ms"])


def test_strictly_mirrored_configs_cannot_be_overridden():
    with pytest.raises(ReplicationError, match="cleanup.policy is always mirrored"):
        topic_configs.check_overrides({"cleanup.policy": "compact", "retention.ms": "1"})


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "/etc/no-such-file", "../encryption_key", "/", "ca.pem/../../x"]
)
def test_server_files_outside_the_tls_directory_are_refused_alike_whether_or_not_they_exist(
    path, settings
):
    """The answer is the same for a file that exists and one that does not: link configs
    cannot be used to find out what is on the console's machine."""
    with pytest.raises(ReplicationError) as refused:
        link_config_validation.validate(
            {
                "bootstrap.servers": "b:9093",
                "security.protocol": "SSL",
                "ssl.truststore.location": path,
            }
        )
    assert str(refused.value) == (
        f"ssl.truststore.location must name a file in {settings.TLS_FILES_DIR}, the console's "
        "TLS files directory (ISTHMUS_TLS_DIR); files elsewhere on the server are not read. Or "
        "give the PEM inline with ssl.truststore.certificates."
    )


def test_a_file_in_the_tls_directory_is_named_by_its_full_path(settings):
    config = link_config_validation.validate(
        {
            "bootstrap.servers": "b:9093",
            "security.protocol": "SSL",
            "ssl.keystore.location": "me.p12",
        }
    )
    assert config["ssl.keystore.location"] == str(Path(settings.TLS_FILES_DIR) / "me.p12")


def test_changing_one_config_leaves_stored_values_of_older_rules_alone():
    stored = {"bootstrap.servers": "old-host-without-port", "metadata.max.age.ms": "5000"}
    clean = link_config_validation.validate(
        {**stored, "metadata.max.age.ms": "6000"}, changed=["metadata.max.age.ms"]
    )
    assert clean == {"bootstrap.servers": "old-host-without-port", "metadata.max.age.ms": "6000"}
    with pytest.raises(ReplicationError, match="not host:port"):
        link_config_validation.validate(stored, changed=["bootstrap.servers"])
