"""What each key of the control channel (`control`) holds: the shapes of its JSON values,
defined once for both ends (TypedDicts of the standard library: executors have nothing else).
The console writes the engine's settings, the link specs and the mirror sets; the engine, its
slots and their copiers write the rest. Apart from `control`, which names the keys and reads and
writes them, because these are most of its lines and none of its logic; `control` names each
of them too, as the console has always read them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict, final

from infra.redis_connect import Sentinels


class EngineSpec(TypedDict):
    """The engine's own settings, in its environment (SPEC_ENV)."""

    engine: str  # its id: every key below is under it
    key: str  # opens the links' sealed specs
    redis_url: str
    redis_sentinels: NotRequired[Sentinels | None]  # Redis through these (infra/redis_connect)
    work_dir: str
    tasks: int | None  # copier slots (None: one per core Spark gives it)
    fresh: bool  # no task of an earlier engine can be alive: its first epochs start at once
    host: NotRequired[str]  # the host whose supervisor started it, which its heartbeat names
    # A spare's token (replication/engine/spare.py): Spark started, nothing claimed until its
    # host's supervisor adopts it by naming this token (control.spare_adopted_key).
    spare: NotRequired[str]


class SlotSpec(TypedDict):
    """What a slot's Spark task is given of the engine's settings."""

    engine: str
    key: str
    redis_url: str
    redis_sentinels: NotRequired[Sentinels | None]


class RegistrySpec(TypedDict):
    url: str
    username: str | None
    password: str | None


class SchemaSpec(TypedDict):
    """Both schema registries, for a link whose records wait for their schemas."""

    source: RegistrySpec
    destination: RegistrySpec


class LinkSpec(TypedDict):
    """A link, as the links hash holds it (sealed): where to read, where to write."""

    link_id: str
    link_name: str
    source: dict[str, str]  # client settings
    destination: dict[str, str]
    schemas: NotRequired[SchemaSpec]
    path: NotRequired[str]  # "batch" (the default) or "record": mirror.copy.path


class Published(TypedDict):
    """A link's spec in the links hash: its digest, and the spec encrypted."""

    digest: str
    sealed: str


class FlowSpec(TypedDict):
    """A merge flow, as the console hands it to the engine (spark_jobs/merging.py)."""

    id: str
    name: str
    source: str  # topic
    destination: str  # topic
    mapping: str  # "one-to-one" or "by-key"
    parts: int
    source_cluster_id: str
    destination_cluster_id: str


class MirrorSpec(TypedDict):
    source_topic: str


class MirrorSet(TypedDict):
    """Per link (`mirrors_key`): the mirrors and merge flows to run, and the set's
    generation."""

    mirrors: dict[str, MirrorSpec]  # by mirror topic
    flows: dict[str, FlowSpec]  # by flow id
    generation: int


class FlowPart(FlowSpec):
    """A part of a merge flow, held by one slot."""

    part: int


@final  # so that `"flow" in entry` tells the two entries apart
class PartitionEntry(TypedDict):
    """What a copier needs to start copying a mirror partition."""

    mirror: str
    source: str  # topic
    topic_id: str  # the mirror topic's
    partition: int
    runs: list[list[int]]  # stored offset translation entries, [source, destination]


@final
class FlowEntry(TypedDict):
    flow: FlowPart


class Assignment(TypedDict):
    """A slot's share of one link (`slot_assignment_key`): its partitions and flow parts, and
    what they were planned for."""

    epoch: str
    version: int
    digest: str
    incarnation: int
    partitions: list[PartitionEntry | FlowEntry]


class SchemaWait(TypedDict):
    """A partition held at a record whose schema the destination's registry lacks."""

    offset: int
    ids: dict[str, str]  # schema id: why it waits
    since_ms: int


class PartitionReport(TypedDict):
    """A copier's mirror partition."""

    run: list[int]  # the translation entry in force, [source, destination]
    translated: bool
    next_source: int
    read_upto: int
    schema_wait: NotRequired[SchemaWait]


class FlowPartitionReport(TypedDict):
    """A merge flow's source partition."""

    next: int
    read: int
    source_hw: int
    checkpoint: NotRequired[Sequence[int] | None]  # one to one: (next, dest)
    others: NotRequired[bool]  # one to one: others write there too


class FlowReport(TypedDict):
    records: int
    skipped: int
    bytes: int
    last_write_ms: int
    latency_ms: int
    records_per_sec: float
    error: str
    partitions: dict[str, FlowPartitionReport]


class CopierReport(TypedDict):
    """A link's copier in a slot."""

    slot: int
    run: str  # this copier's counters start at 0
    version: int  # the assignment version applied
    state: str  # copying, waiting or failed
    error: str
    records: int
    bytes: int
    last_write_ms: int
    queued: int
    partitions: dict[str, PartitionReport]  # "partition/mirror"
    flows: dict[str, FlowReport]  # by flow part ("flow id/part")


class CopierFailures(TypedDict):
    count: int
    error: str
    given_up: bool


class SlotReport(TypedDict):
    """A slot's report (`slot_report_key`)."""

    epoch: str
    slot: int
    pid: int
    error: str
    consumers: int
    links: dict[str, CopierReport]
    failures: dict[str, CopierFailures]


# The engine's reports to the console. A report not there yet reads as an empty one, so every
# key may be missing to a reader.


class MirrorPartitionProgress(TypedDict, total=False):
    run: list[int]
    translated: bool
    source_hw: int
    read_upto: int
    next_source: int
    schema_wait: SchemaWait


MirrorProgress = dict[str, dict[str, MirrorPartitionProgress]]  # `progress_key`: mirror, partition


class LinkHeartbeat(TypedDict, total=False):
    """`heartbeat_key`."""

    at_ms: int
    started_ms: int
    pid: int  # the engine's
    state: str  # starting, running, stopping, stopped or failed
    error: str
    mirrors: list[str]  # of the generation taken up
    generation: int  # no copier writes outside of its mirror set any more
    epochs: list[str]
    records: int
    bytes: int
    records_per_sec: float
    bytes_per_sec: float
    fetched_at_ms: int  # when the source's high watermarks were last read
    last_write_ms: int
    behind: bool
    flows: dict[str, FlowReport]  # by flow id
    schema_waits: list[int]


class SlotLinkBeat(TypedDict):
    partitions: list[str]
    queued: int
    state: str
    error: str


class SlotBeat(TypedDict):
    slot: int
    epoch: str
    state: str  # running or restarting
    pid: int | None
    failures: int
    error: str
    records_per_sec: float
    consumers: int
    links: dict[str, SlotLinkBeat]


class SpareBeat(TypedDict):
    """`spare_key`: a spare engine waiting on its host to be adopted."""

    at_ms: int
    pid: int
    host: str


class EngineHeartbeat(TypedDict, total=False):
    """`engine_heartbeat_key`."""

    at_ms: int
    started_ms: int
    pid: int
    host: str  # where it runs (its spec's host)
    state: str
    error: str
    master: str
    slots: list[SlotBeat]
    links: dict[str, str]  # link id -> name
