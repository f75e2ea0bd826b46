"""Moving consumers to the mirror: `migration` (seed 001's consumer group migration, then a
promote) and `disaster-recovery` (the source cluster lost, a failover, the group resuming on
the destination from its synced offsets). Both with names of their own: a topic of 2
partitions and 100 records, a link that syncs the run's group every second, and the group."""

from __future__ import annotations

import json
from collections.abc import Callable

from replication.cutover import promote
from replication.kafka.connections import cluster_admin
from replication.models import MirrorTopic
from replication.scenarios import clients
from replication.scenarios.clusters import cluster_control
from replication.scenarios.runner import Context, Scenario, Step, StepFailed, wait_for
from replication.scenarios.share_data import ON_DESTINATION, ON_SOURCE, cleanup, create_link_with
from replication.topics import links, mirrors

RECORDS, READ_FIRST, PARTITIONS = 100, 60, 2


def _names(tag: str) -> dict[str, str]:
    return {"topic": f"{tag}-orders", "link": f"{tag}-link", "group": f"{tag}-billing"}


def group_filters(*entries: tuple[str, str]) -> str:
    return json.dumps(
        {
            "groupFilters": [
                {"name": name, "patternType": "LITERAL", "filterType": kind}
                for name, kind in entries
            ]
        }
    )


def create_and_fill(c: Context) -> str:
    clients.create_topic(c.source, c.names["topic"], PARTITIONS)
    values = [f"{i}".encode() for i in range(RECORDS)]
    reports = clients.produce(
        c.source.connection_config(), c.names["topic"], values, partitions=PARTITIONS
    )
    if any(error for error, _, _ in reports):
        raise StepFailed(f"{RECORDS} records written", str([e for e, _, _ in reports if e][:3]))
    return f"{RECORDS} records over {PARTITIONS} partitions of {c.names['topic']}"


def link_syncing_offsets(c: Context) -> str:
    return create_link_with(
        c,
        {
            "consumer.offset.sync.enable": "true",
            "consumer.offset.sync.ms": "1000",
            "consumer.offset.group.filters": group_filters(("*", "INCLUDE")),
        },
    )


def mirror_caught_up(c: Context) -> str:
    mirror = mirrors.create_mirror(c.actor, c.link, c.names["topic"])
    source, destination = cluster_admin(c.source), cluster_admin(c.destination)

    def ends() -> tuple[dict, dict]:
        return (
            source.end_offsets(c.names["topic"], PARTITIONS),
            destination.end_offsets(c.names["topic"], PARTITIONS),
        )

    wait_for(
        lambda: (e := ends())[0] == e[1],
        120,
        "the mirror's ends equal the source's",
        lambda: "source ends {}, mirror ends {}".format(*ends()),
    )
    return f"mirror {mirror.mirror_topic} caught up: ends {ends()[1]}"


def read_part_on_source(c: Context) -> str:
    read = clients.consume_as_group(
        c.source.connection_config(), c.names["topic"], c.names["group"], READ_FIRST, PARTITIONS
    )
    if len(read) != READ_FIRST:
        raise StepFailed(f"{READ_FIRST} records read", f"{len(read)}")
    c.kept["read on the source"] = [v.decode() for v in read]
    offsets = _by_partition(cluster_admin(c.source).group_offsets([c.names["group"]]), c)
    c.kept["source offsets"] = offsets
    return f"read {READ_FIRST} records, committed {_shown(offsets)}, consumer stopped"


def offsets_synced(c: Context) -> str:
    group = c.names["group"]
    destination = cluster_admin(c.destination)
    wanted = c.kept["source offsets"]

    def held() -> dict:
        return _by_partition(destination.group_offsets([group]), c)

    wait_for(
        lambda: held() == wanted,
        60,
        f"the destination's offsets {_shown(wanted)}",
        lambda: _shown(held()) or "none",
    )
    ends = destination.end_offsets(c.names["topic"], PARTITIONS)
    if any(ends[int(p)] < offset for p, offset in wanted.items()):
        raise StepFailed("the mirror beyond the committed offsets", f"mirror ends {ends}")
    return f"the destination holds {_shown(held())}, as the source; mirror ends {ends}"


def exclude_group(c: Context) -> str:
    filters = group_filters(("*", "INCLUDE"), (c.names["group"], "EXCLUDE"))
    links.alter_link_configs(c.actor, c.link, {"consumer.offset.group.filters": filters}, [])
    return f"consumer.offset.group.filters now excludes {c.names['group']}"


def resume_on_destination(c: Context) -> str:
    rest = clients.consume_as_group(
        c.destination.connection_config(), c.names["topic"], c.names["group"], None, PARTITIONS
    )
    everything = sorted(c.kept["read on the source"] + [v.decode() for v in rest], key=int)
    if everything != [str(i) for i in range(RECORDS)] or len(rest) != RECORDS - READ_FIRST:
        raise StepFailed(
            f"the other {RECORDS - READ_FIRST} records, none skipped or read twice",
            f"{len(rest)} records, {len(set(everything))} distinct of {RECORDS}",
        )
    return f"read the other {len(rest)} records on the destination: none skipped, none twice"


def stop_mirror(kind: str):
    def run(c: Context) -> str:
        [outcome] = promote.stop_mirrors(
            c.actor, c.link, [c.names["topic"]], kind, wait=True, note=f"{kind} scenario"
        )
        if outcome.error:
            raise StepFailed(f"the {kind} to finish", outcome.error)
        mirror = MirrorTopic.objects.get(destination=c.destination, mirror_topic=c.names["topic"])
        if mirror.state != MirrorTopic.State.STOPPED:
            raise StepFailed("STOPPED", mirror.state)
        return f"{kind}: the mirror is STOPPED at {mirror.stop_offsets} and writable"

    return run


def stop_source(c: Context) -> str:
    c.kept["source stopped"] = True
    _source_cluster(stop=True)
    try:
        cluster_admin(c.source).describe_cluster()
    except Exception:  # (not answering is what this step wants)
        return "the source cluster is stopped and does not answer"
    raise StepFailed("the source not answering", "it still answers")


def start_source(c: Context) -> str:
    _source_cluster(stop=False)
    c.kept.pop("source stopped", None)
    found = wait_for(
        lambda: clients.quietly(lambda: cluster_admin(c.source).describe_cluster()),
        60,
        "the source answering",
        lambda: "no answer",
    )
    return f"the source cluster {found.cluster_id} answers again"


def _source_cluster(stop: bool) -> None:
    """Stop or start the source cluster through the stack's port (on `make demo`'s stack, its
    source cluster: the only one a scenario can)."""
    control = cluster_control()
    try:
        if stop:
            control.stop("source")
        else:
            control.start("source")
    except Exception as exc:
        raise StepFailed(
            f"the embedded stack's source cluster to {'stop' if stop else 'start'} "
            "(this scenario runs on `make demo`'s clusters)",
            str(exc),
        ) from exc


def recovering(clean: Callable[[Context], list[str]]) -> Callable[[Context], list[str]]:
    """`clean`, after starting the source again if the run failed with it stopped."""

    def run(c: Context) -> list[str]:
        left = []
        if c.kept.get("source stopped"):
            try:
                start_source(c)
            except StepFailed as exc:
                left.append(f"the source cluster did not start again: {exc.seen}")
        return left + clean(c)

    return run


def _by_partition(groups: dict, c: Context) -> dict[str, int]:
    """The run's group's committed offsets on its topic, by partition (as stored with the run:
    JSON keys are strings)."""
    offsets = groups.get(c.names["group"], {})
    return {str(p): o for (t, p), o in offsets.items() if t == c.names["topic"]}


def _shown(offsets: dict[str, int]) -> str:
    return ", ".join(
        f"partition {p}: {o}" for p, o in sorted(offsets.items(), key=lambda i: int(i[0]))
    )


# Steps the scenarios that move consumers share (dr-round-trip too).
CREATE_AND_FILL = Step(
    "Create a topic and write 100 records",
    "A topic of 2 partitions on the source, with 100 records.",
    "kafka-topics --create --topic {topic} --partitions 2 " + ON_SOURCE,
    "100 records",
    create_and_fill,
)
MIRROR_CAUGHT_UP = Step(
    "Mirror the topic",
    "The mirror copies the topic; wait until it has every record.",
    "kafka-mirrors --create --mirror-topic {topic} --link {link} " + ON_DESTINATION,
    "the mirror caught up",
    mirror_caught_up,
)
READ_PART = Step(
    "Read part of it on the source, then stop the consumer",
    "The group reads 60 records, commits and stops.",
    "kafka-console-consumer --topic {topic} --group {group} --max-messages 60 " + ON_SOURCE,
    "60 records read and committed",
    read_part_on_source,
)
OFFSETS_SYNCED = Step(
    "Wait for the offset sync",
    "The link writes the group's offsets to the destination, translated to the mirror's.",
    "kafka-consumer-groups --describe --group {group} " + ON_DESTINATION,
    "the same offsets on the destination",
    offsets_synced,
)
LOSE_SOURCE = Step(
    "Lose the source cluster",
    "The embedded source cluster is stopped, as in an outage.",
    "python manage.py devstack down source",
    "the source not answering",
    stop_source,
)
FAIL_OVER = Step(
    "Fail over",
    "A failover stops the mirror at once, without the source, and makes it writable.",
    "kafka-mirrors --failover --topics {topic} " + ON_DESTINATION,
    "STOPPED",
    stop_mirror(promote.FAILOVER),
)
START_SOURCE = Step(
    "Start the source cluster again",
    "The old source comes back; its topic no longer feeds the promoted one.",
    "python manage.py devstack up source",
    "the source answering",
    start_source,
)
_RESUME = Step(
    "Resume the group on the destination",
    "It reads from its synced offsets: nothing skipped, nothing read twice.",
    "kafka-console-consumer --topic {topic} --group {group} " + ON_DESTINATION,
    "the other 40 records",
    resume_on_destination,
)
_COMMON = [
    CREATE_AND_FILL,
    Step(
        "Create a link that syncs consumer offsets",
        "consumer.offset.sync.enable=true with a group filter that includes every group, "
        "synced every second.",
        "kafka-cluster-links --bootstrap-server localhost:9093 --create --link {link} "
        "--config-file link.properties --consumer-group-filters-json-file groups.json",
        "a link to the source",
        link_syncing_offsets,
    ),
    MIRROR_CAUGHT_UP,
    READ_PART,
    OFFSETS_SYNCED,
]

MIGRATION = Scenario(
    name="migration",
    title="Migrate a consumer group",
    summary="Seed 001: move a consumer group to the destination with its offsets, then promote.",
    names=_names,
    cleanup=cleanup,
    steps=[
        *_COMMON,
        Step(
            "Exclude the group from the sync",
            "The group will commit on the destination from now on: the link must not overwrite "
            "its offsets.",
            "kafka-configs --alter --cluster-link {link} --add-config-file newFilters.properties "
            + ON_DESTINATION,
            "the group excluded",
            exclude_group,
        ),
        Step(
            "Start the consumer on the destination",
            "It goes on exactly where it stopped on the source.",
            "kafka-console-consumer --topic {topic} --group {group} " + ON_DESTINATION,
            "the other 40 records",
            resume_on_destination,
        ),
        Step(
            "Promote the mirror",
            "The topic becomes the destination's own; producers can move to it.",
            "kafka-mirrors --promote --topics {topic} " + ON_DESTINATION,
            "STOPPED",
            stop_mirror(promote.PROMOTE),
        ),
    ],
)

DISASTER_RECOVERY = Scenario(
    name="disaster-recovery",
    title="Recover from losing the source cluster",
    summary="The source cluster stops; fail over, and the group resumes on the destination.",
    names=_names,
    cleanup=recovering(cleanup),
    steps=[*_COMMON, LOSE_SOURCE, FAIL_OVER, _RESUME, START_SOURCE],
    stops_source=True,
)
