"""Cluster link configs: the keys a link accepts, with their defaults, checks and words
(`KEYS`), those that say where and as whom it connects (`CONNECTION_KEYS`), a config's value in
effect and what describe shows of a link's configs. Keys and defaults follow Confluent Cluster
Linking. Each value's check is in `link_config_values`, the check of a whole set in
`link_config_validation`, a link bound to a registered cluster's credentials in
`link_credentials`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from replication.core import crypto
from replication.core import link_config_values as values


@dataclass(frozen=True)
class ConfigKey:
    name: str
    default: str | None
    check: Callable[[str], str]
    doc: str
    immutable: bool = False  # set at creation only
    read_only: bool = False  # shown, never changed
    connection: bool = False  # part of the client config for the source


_SSL_KEYS: dict[str, tuple[Callable[[str], str], str]] = {
    "ssl.truststore.location": (
        values.tls_file("ssl.truststore.certificates"),
        "Path of a PEM file of trusted CA certificates, in the console's TLS files directory.",
    ),
    "ssl.truststore.certificates": (values.text, "Trusted CA certificates, inline PEM."),
    "ssl.truststore.type": (
        values.only("PEM", "the console's clients read trust stores as PEM"),
        "PEM.",
    ),
    "ssl.truststore.password": (str, "Not needed for PEM trust stores; accepted and unused."),
    "ssl.keystore.location": (
        values.tls_file("ssl.keystore.key and ssl.keystore.certificate.chain"),
        "Path of the client key store (PKCS12) for mutual TLS, in the console's TLS files "
        "directory.",
    ),
    "ssl.keystore.password": (str, "Password of the key store."),
    "ssl.keystore.type": (values.choice("PKCS12", "PEM"), "PKCS12 or PEM."),
    "ssl.keystore.certificate.chain": (values.text, "Client certificate chain, inline PEM."),
    "ssl.keystore.key": (values.text, "Client private key, inline PEM."),
    "ssl.key.password": (str, "Password of the client private key."),
    "ssl.endpoint.identification.algorithm": (
        lambda v: values.choice("HTTPS", "")(v).lower(),
        "https (check the broker host name) or empty to skip the check.",
    ),
}

KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in [
        ConfigKey(
            "bootstrap.servers",
            None,
            values.check_brokers,
            "Brokers of the source cluster, host:port[,host:port].",
            connection=True,
        ),
        ConfigKey(
            "security.protocol",
            "PLAINTEXT",
            values.choice("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
            "How the link connects to the source.",
            connection=True,
        ),
        ConfigKey(
            "sasl.mechanism",
            "PLAIN",
            values.mechanism,
            "SASL mechanism for the source.",
            connection=True,
        ),
        ConfigKey(
            "sasl.jaas.config",
            None,
            values.text,
            "The link's SASL login, e.g. org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="u" password="p";',
            connection=True,
        ),
        ConfigKey(
            "sasl.username",
            None,
            values.text,
            "SASL user, instead of sasl.jaas.config.",
            connection=True,
        ),
        ConfigKey(
            "sasl.password",
            None,
            values.text,
            "SASL password, instead of sasl.jaas.config.",
            connection=True,
        ),
        *(
            ConfigKey(name, None, check, doc, connection=True)
            for name, (check, doc) in _SSL_KEYS.items()
        ),
        ConfigKey(
            "metadata.max.age.ms",
            "300000",
            values.positive_long,
            "How often the link refreshes source metadata; new source partitions appear on "
            "the mirror within this time.",
        ),
        ConfigKey(
            "topic.config.sync.ms",
            "5000",
            values.positive_int,
            "How often mirror topic configs are refreshed from the source.",
        ),
        ConfigKey(
            "topic.config.sync.include",
            None,
            values.topic_config_list,
            "Comma-separated syncable topic configs to sync; unset means all. Configs left out "
            "may be overridden on the mirror.",
        ),
        ConfigKey(
            "cluster.link.prefix",
            None,
            values.prefix,
            "Prefix added to mirror topic names. Set at creation only.",
            immutable=True,
        ),
        ConfigKey(
            "remote.cluster.link.prefix",
            None,
            values.prefix,
            "On a bidirectional link: the prefix of the other half's mirror topics, on this "
            "link's source (by default cluster.link.prefix). Prefixes that name each topic's "
            "origin (dc1. on dc2, dc2. on dc1) are the prefixed active-active shape. Set at "
            "creation only.",
            immutable=True,
        ),
        ConfigKey(
            "cluster.link.paused",
            "false",
            values.boolean,
            "Pause the whole link; its mirrors show LINK_PAUSED.",
        ),
        ConfigKey(
            "mirror.copy.path",
            "BATCH",
            values.choice("BATCH", "RECORD"),
            "How the link's mirrors are copied: BATCH copies record batches as they are, "
            "byte for byte; RECORD decodes and writes each record. A link that syncs schemas, "
            "or reaches a cluster over TLS, is copied record by record either way; the link's "
            "page says which path it takes and why.",
        ),
        ConfigKey(
            "mirror.start.offset.spec",
            "earliest",
            values.start_offset_spec,
            "Where new mirrors begin: earliest, latest or an ISO-8601 timestamp.",
        ),
        ConfigKey(
            "availability.check.ms",
            "60000",
            values.positive_int,
            "Interval of the source availability probe.",
        ),
        ConfigKey(
            "availability.check.consecutive.failure.threshold",
            "5",
            values.positive_int,
            "Failed probes in a row after which the link is UNAVAILABLE.",
        ),
        ConfigKey(
            "cluster.link.retry.timeout.ms",
            "300000",
            values.non_negative_int,
            "How long a missing source topic is retried before its mirror FAILS.",
        ),
        ConfigKey(
            "consumer.offset.sync.enable",
            "false",
            values.boolean,
            "Sync the committed offsets of the groups consumer.offset.group.filters selects to "
            "the same groups on the destination, translated to the mirrors' offsets.",
        ),
        ConfigKey(
            "consumer.offset.sync.ms",
            "30000",
            values.whole(1000, values.JAVA_INT_MAX),
            "How often consumer offsets are synced, in ms (at least 1000).",
        ),
        ConfigKey(
            "consumer.offset.group.filters",
            None,
            values.filter_json("groupFilters"),
            'Which consumer groups are synced: {"groupFilters": [{"name": "*", "patternType": '
            '"LITERAL", "filterType": "INCLUDE"}]}. With none, no group is synced.',
        ),
        ConfigKey(
            "consumer.group.prefix.enable",
            "false",
            values.boolean,
            "Give synced groups the link prefix on the destination (needs cluster.link.prefix).",
            immutable=True,
        ),
        ConfigKey(
            "acl.sync.enable",
            "false",
            values.boolean,
            "Sync the source ACLs acl.filters selects to the destination (not with a prefix).",
        ),
        ConfigKey(
            "acl.sync.ms",
            "5000",
            values.whole(1000, values.JAVA_INT_MAX),
            "How often ACLs are synced, in ms (at least 1000).",
        ),
        ConfigKey(
            "schema.sync.enable",
            "false",
            values.boolean,
            "Isthmus's own: sync the schemas of the mirrors' subjects (<source topic>-key and "
            "-value, and the subjects they reference) from the source cluster's schema "
            "registry to the destination's, under the same ids and versions.",
        ),
        ConfigKey(
            "schema.subjects",
            None,
            values.subject_filters,
            "Which subjects schema sync copies: names, comma-separated, a name ending in * "
            "for every subject it begins (* alone: every subject). Unset: the subjects of the "
            "link's mirrors. A subject a mirrored record's schema id names is synced whatever "
            "this says: the record waits for it.",
        ),
        ConfigKey(
            "schema.context",
            None,
            values.prefix,
            "A schema context of the destination's registry to sync into (ids and versions "
            "are kept within it; consumers read through <registry URL>/contexts/.<context>). "
            "Unset: the registry's default context.",
        ),
        ConfigKey(
            "schema.source.context",
            None,
            values.prefix,
            "A schema context of the source's registry to sync from (a bidirectional link's "
            "other half reads from the context this half syncs into). Unset: the registry's "
            "default context.",
        ),
        ConfigKey(
            "schema.sync.ms",
            "30000",
            values.whole(1000, values.JAVA_INT_MAX),
            "How often schemas are synced, in ms (at least 1000).",
        ),
        ConfigKey(
            "acl.filters",
            None,
            values.filter_json("aclFilters"),
            'Which ACLs are synced: {"aclFilters": [{"resourceFilter": {"resourceType": '
            '"topic", "name": "orders", "patternType": "literal"}, "accessFilter": '
            '{"operation": "any", "permissionType": "any"}}]}. Destination ACLs these filters '
            "select are made equal to the source's; others are never touched.",
        ),
        ConfigKey(
            "auto.create.mirror.topics.enable",
            "false",
            values.boolean,
            "Create mirrors automatically for the source topics "
            "auto.create.mirror.topics.filters selects, now and later.",
        ),
        ConfigKey(
            "auto.create.mirror.topics.filters",
            None,
            values.filter_json("topicFilters"),
            'Which source topics get mirrors automatically: {"topicFilters": [{"name": '
            '"orders", "patternType": "PREFIXED", "filterType": "INCLUDE"}]}.',
        ),
        ConfigKey(
            "link.mode",
            "DESTINATION",
            values.one_of(
                ("DESTINATION", "BIDIRECTIONAL", "SOURCE"),
                "DESTINATION copies into this cluster, BIDIRECTIONAL joins two registered "
                "clusters with a link each way under one name, SOURCE is the source half of a "
                "source-initiated link",
            ),
            "This side's role: DESTINATION, BIDIRECTIONAL (a link each way between two "
            "registered clusters, which reverse-and-start-mirror and truncate-and-restore "
            "need), or SOURCE (created on the source, naming the destination half of a "
            "source-initiated link).",
            immutable=True,
        ),
        ConfigKey(
            "connection.mode",
            "OUTBOUND",
            values.one_of(
                ("OUTBOUND", "INBOUND"),
                "OUTBOUND: the link's engine is beside this cluster; INBOUND: beside its "
                "source, for a network that lets no connection in",
            ),
            "Which side opens the connections: OUTBOUND (the engine beside this cluster "
            "copies) or INBOUND (a source-initiated link's destination half: the engine "
            "beside the source copies, once the source half is made there with "
            "link.mode=SOURCE).",
            immutable=True,
        ),
        ConfigKey(
            "remote.link.connection.mode",
            None,
            values.only("OUTBOUND", "set when the source half is made"),
            "A source-initiated link's: OUTBOUND once its source half is made.",
            read_only=True,
        ),
    ]
}
# What says where and as whom a link connects: changing any of it sends the link's
# credentials somewhere new, so it needs them given again.
CONNECTION_KEYS = frozenset(k.name for k in KEYS.values() if k.connection)


def effective(configs: dict[str, str], name: str) -> str | None:
    """The value of `name`: as set, else its default."""
    return configs.get(name, KEYS[name].default)


@dataclass(frozen=True)
class ConfigEntry:
    """One link config as describe shows it (the fields of Kafka REST's link config data)."""

    name: str
    value: str | None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str
    doc: str


def describe(plain: dict[str, str], secret: dict[str, str]) -> list[ConfigEntry]:
    """Every link config that is set or has a default; secret values masked."""
    shown = crypto.masked(plain, secret)
    entries = []
    for key in KEYS.values():
        if key.name not in shown and key.default is None:
            continue
        is_set = key.name in shown
        entries.append(
            ConfigEntry(
                name=key.name,
                value=shown[key.name] if is_set else key.default,
                is_default=not is_set,
                is_read_only=key.read_only or key.immutable,
                is_sensitive=key.name in secret,
                source="DYNAMIC_CLUSTER_LINK_CONFIG" if is_set else "DEFAULT_CONFIG",
                doc=key.doc,
            )
        )
    return entries
