"""`schema-linking`: seed 003's schema part (each datacenter has a schema registry, and what
the Avro consumers of dc2 decode must be there), with a mirror and schema sync instead of
Replicator copying `_schemas`. An Avro producer on dc1 (confluent-kafka's AvroSerializer with
dc1's registry) writes users records to a topic the link mirrors; an Avro consumer on dc2 decodes
every record through dc2's registry; then the producer moves to a new version of the schema and
the same consumer, never restarted, decodes the new records too. The schemas reach dc2's
registry under the same ids and versions, before the records that need them."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from infra.registry_http import SchemaRegistryError
from replication.models import KafkaCluster, SchemaSubjectSync
from replication.scenarios import clients, share_data
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.scenarios.share_data import ON_DESTINATION, ON_SOURCE, create_link_with
from replication.scenarios.share_data import cleanup as cleanup_link_and_topic
from replication.schemas import subject_sync
from replication.topics import mirrors

RECORDS = 10  # of each version of the schema
USERS_V1 = """{"type": "record", "name": "users", "namespace": "isthmus.scenario",
 "fields": [{"name": "userid", "type": ["null", "string"], "default": null},
            {"name": "regionid", "type": ["null", "string"], "default": null},
            {"name": "gender", "type": ["null", "string"], "default": null}]}"""
# Version 2 adds a field with a default: backward compatible, as the registry checks.
USERS_V2 = USERS_V1.replace(
    '"default": null}]}',
    '"default": null},\n            {"name": "registertime", "type": ["null", "long"], '
    '"default": null}]}',
)


def _names(tag: str) -> dict[str, str]:
    return {"topic": f"{tag}-users", "link": f"{tag}-schema-link"}


def _users(version: int) -> list[dict]:
    genders = ("FEMALE", "MALE", "OTHER")
    users = []
    for i in range(RECORDS):
        user: dict[str, str | int] = {
            "userid": f"User_{i}",
            "regionid": f"Region_{i % 9 + 1}",
            "gender": genders[i % 3],
        }
        if version == 2:
            user["registertime"] = 1_500_000_000_000 + i
        users.append(user)
    return users


def _registry_client(cluster: KafkaCluster) -> SchemaRegistryClient:
    spec = cluster.schema_registry_spec()
    if spec is None:
        raise StepFailed(
            f"a schema registry for {cluster.name}", "none: set one on the cluster's page"
        )
    conf = {"url": spec["url"]}
    if spec["username"]:
        conf["basic.auth.user.info"] = f"{spec['username']}:{spec['password'] or ''}"
    return SchemaRegistryClient(conf)


def _produce_avro(c: Context, schema: str, users: list[dict]) -> int:
    """Write `users` to the topic on dc1 as the AvroSerializer does (registering the schema
    under <topic>-value on dc1's registry first); returns the schema id the records carry."""
    topic = c.names["topic"]
    serialize = AvroSerializer(_registry_client(c.source), schema)
    context = SerializationContext(topic, MessageField.VALUE)
    values = [serialize(user, context) for user in users]
    reports = clients.produce(c.source.connection_config(), topic, values)
    failed = [str(e) for e, _, _ in reports if e is not None]
    if failed or len(reports) != len(values):
        raise StepFailed(f"{len(values)} Avro records written", failed[0] if failed else "fewer")
    return int.from_bytes(values[0][1:5], "big")


def create_topic(c: Context) -> str:
    for cluster in (c.source, c.destination):
        _registry_client(cluster)  # both registries are there before anything is made
    return share_data.create_topic(c)


def create_link(c: Context) -> str:
    return create_link_with(c, {"schema.sync.enable": "true"}) + ", syncing schemas"


def create_mirror(c: Context) -> str:
    mirror = mirrors.create_mirror(c.actor, c.link, c.names["topic"])
    return f"mirror topic {mirror.mirror_topic} on {c.destination.name} (dc2), read-only"


def produce_v1(c: Context) -> str:
    schema_id = _produce_avro(c, USERS_V1, _users(1))
    c.kept["v1 id"] = schema_id
    return (
        f"{RECORDS} users records written on dc1 with schema id {schema_id} "
        f"({c.names['topic']}-value version 1 on dc1's registry)"
    )


def consume_as_it_evolves(c: Context) -> str:
    """One Avro consumer on dc2, never restarted: version 1's records, then version 2's,
    written while it reads."""
    topic = c.names["topic"]
    deserialize = AvroDeserializer(_registry_client(c.destination))
    context = SerializationContext(topic, MessageField.VALUE)
    consumer = Consumer(
        {
            **clients.ordinary(c.destination),
            "group.id": f"{topic}-avro-reader",
            "enable.auto.commit": False,
        }
    )
    read: list[dict] = []

    def read_until(count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(read) < count and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if error := msg.error():
                raise StepFailed("records", error.str())
            try:
                read.append(deserialize(msg.value(), context))
            except Exception as exc:  # what the deserializer says: the schema was missing
                raise StepFailed(
                    f"record {msg.offset()} decoded through dc2's registry", str(exc)
                ) from exc

    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        read_until(RECORDS, 120)
        if read != _users(1):
            raise StepFailed(f"the {RECORDS} users written with version 1", str(read))
        c.kept["v2 id"] = _produce_avro(c, USERS_V2, _users(2))
        read_until(2 * RECORDS, 120)
    finally:
        consumer.close()
    if read[RECORDS:] != _users(2):
        raise StepFailed(
            f"the {RECORDS} users written with version 2, registertime and all", str(read[RECORDS:])
        )
    return (
        f"decoded {RECORDS} records of schema id {c.kept['v1 id']}, then, without a restart, "
        f"{RECORDS} of the new version's id {c.kept['v2 id']}, registertime included"
    )


def same_ids(c: Context) -> str:
    subject = f"{c.names['topic']}-value"
    source, destination = c.source.schema_registry(), c.destination.schema_registry()
    assert source is not None and destination is not None  # the scenario's clusters have one
    try:
        here = [source.version(subject, v) for v in source.versions(subject)]
        there = [destination.version(subject, v) for v in destination.versions(subject)]
        mode = destination.mode(subject)
    except SchemaRegistryError as exc:
        raise StepFailed(f"{subject} on both registries", str(exc)) from exc
    ids = [(v.version, v.id) for v in here]
    if [(v.version, v.id) for v in there] != ids or len(ids) != 2:
        raise StepFailed(
            f"{subject} versions 1 and 2 under the same ids on both registries",
            f"dc1: {ids}, dc2: {[(v.version, v.id) for v in there]}",
        )
    if mode != subject_sync.IMPORT:
        raise StepFailed(f"{subject} in IMPORT mode on dc2", mode)
    row = wait_for(
        lambda: SchemaSubjectSync.objects.filter(
            link=c.link, subject=subject, state=SchemaSubjectSync.State.IN_STEP
        ).first(),
        60,
        f"{subject} IN_STEP on the link's page",
        lambda: "not yet",
    )
    return (
        f"{subject}: versions {', '.join(f'{v} as id {i}' for v, i in ids)} on both "
        f"registries, IMPORT mode on dc2; the link shows it {row.state}"
    )


def cleanup(c: Context) -> list[str]:
    """The link and topic, then the run's subject on both registries."""
    left = cleanup_link_and_topic(c)
    subject = f"{c.names['topic']}-value"
    for cluster in (c.source, c.destination):
        registry = cluster.schema_registry()
        try:
            if registry is not None:
                registry.delete_subject(subject)
        except SchemaRegistryError as exc:
            left.append(f"subject {subject} on {cluster.name}: {exc}")
    return left


AVRO = "kafka-avro-console-{} --topic {{topic}} --property schema.registry.url={}"

SCHEMA_LINKING = Scenario(
    name="schema-linking",
    title="Schemas follow their topics",
    summary="Seed 003's schema part: Avro records written on dc1 decode on dc2 through dc2's "
    "own registry, as the schema evolves, with the same schema ids on both sides.",
    names=_names,
    cleanup=cleanup,
    steps=[
        Step(
            "Create the topic on dc1",
            "A users topic on the source cluster; both clusters have a schema registry.",
            "kafka-topics --create --topic {topic} " + ON_SOURCE,
            "topic {topic} on dc1",
            create_topic,
        ),
        Step(
            "Create the link, syncing schemas",
            "A link from dc1 with schema.sync.enable=true: the mirrors' subjects go to dc2's "
            "registry under the same ids, and no record is written before its schema.",
            "kafka-cluster-links --bootstrap-server localhost:9093 --create --link {link} "
            "--config bootstrap.servers=localhost:9092,schema.sync.enable=true",
            "a link syncing schemas",
            create_link,
        ),
        Step(
            "Create the mirror topic",
            "A read-only copy of the users topic on dc2.",
            "kafka-mirrors --create --mirror-topic {topic} --link {link} " + ON_DESTINATION,
            "mirror topic {topic}",
            create_mirror,
        ),
        Step(
            "Produce Avro records on dc1",
            "An Avro producer registers the users schema on dc1's registry and writes ten "
            "records that carry its id.",
            AVRO.format("producer", "http://localhost:8081") + " " + ON_SOURCE,
            "10 records with schema version 1",
            produce_v1,
        ),
        Step(
            "Consume them on dc2 as the schema evolves",
            "An Avro consumer on dc2 decodes every record through dc2's registry; meanwhile "
            "the producer moves to version 2 of the schema (a new field), and the same "
            "consumer decodes the new records without a restart.",
            AVRO.format("consumer", "http://localhost:8082")
            + " --from-beginning "
            + ON_DESTINATION,
            "20 records decoded, the last 10 with registertime",
            consume_as_it_evolves,
        ),
        Step(
            "Compare the registries",
            "The subject has the same versions under the same ids on both registries, and is "
            "in IMPORT mode on dc2 (it takes no schema from dc2's producers).",
            "curl http://localhost:8081/subjects/{topic}-value/versions/2; "
            "curl http://localhost:8082/subjects/{topic}-value/versions/2",
            "the same ids on both",
            same_ids,
        ),
    ],
)
