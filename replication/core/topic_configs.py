"""Which topic configs a mirror takes from its source, by class (Cluster Linking's three classes).

* strictly mirrored: always copied, and cannot be overridden on the mirror;
* synced: copied only when set on the source topic, and only while named in the link's
  `topic.config.sync.include` (unset means all); otherwise the mirror may override them;
* independent: everything else (placement, throttles, tiered storage...), never touched.
"""

from __future__ import annotations

from infra.kafka_topics import ConfigValue
from replication.core.errors import ReplicationError

STRICTLY_MIRRORED = frozenset(
    {
        "cleanup.policy",
        "max.message.bytes",
        "message.timestamp.type",
        "message.timestamp.difference.max.ms",  # gone in Kafka 4, still on older sources
    }
)

SYNCED = frozenset(
    {
        "retention.ms",
        "retention.bytes",
        "delete.retention.ms",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "segment.bytes",
        "segment.ms",
        "segment.jitter.ms",
        "segment.index.bytes",
        "index.interval.bytes",
        "flush.messages",
        "flush.ms",
        "file.delete.delay.ms",
        "preallocate",
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "message.downconversion.enable",
        "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
    }
)

SYNCABLE = STRICTLY_MIRRORED | SYNCED


def synced_names(include: str | None, overrides: dict[str, str]) -> frozenset[str]:
    """The configs the link keeps equal to the source for one mirror."""
    chosen = SYNCED if include is None else SYNCED & {n.strip() for n in include.split(",")}
    return STRICTLY_MIRRORED | (chosen - overrides.keys())


def check_overrides(overrides: dict[str, str]) -> None:
    """Refuse overrides of strictly mirrored configs; Kafka itself judges the rest."""
    refused = sorted(STRICTLY_MIRRORED & overrides.keys())
    if refused:
        raise ReplicationError(
            f"{', '.join(refused)} {'is' if len(refused) == 1 else 'are'} always mirrored from "
            "the source topic and cannot be set on a mirror. Change it on the source instead."
        )


def desired(
    source: dict[str, ConfigValue], include: str | None, overrides: dict[str, str]
) -> dict[str, str]:
    """The topic-level configs the mirror should carry."""
    wanted = dict(overrides)
    for name in synced_names(include, overrides):
        entry = source.get(name)
        if entry is None or entry.value is None:
            continue
        if name in STRICTLY_MIRRORED or entry.is_set:
            wanted[name] = entry.value
    return wanted


def changes(
    wanted: dict[str, str], mirror_set: dict[str, str | None], managed: frozenset[str]
) -> tuple[dict[str, str], list[str]]:
    """What to set and what to delete on the mirror so its managed configs match `wanted`.

    `mirror_set` holds the configs set on the mirror topic itself. A managed config set on the
    mirror that the source no longer sets is deleted, so the destination default applies.
    """
    to_set = {
        name: value
        for name, value in wanted.items()
        if name in managed and mirror_set.get(name) != value
    }
    to_delete = sorted(name for name in managed & mirror_set.keys() if name not in wanted)
    return to_set, to_delete
