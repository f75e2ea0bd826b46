"""The mirrors' offset translation as the console's processes read it: incrementally, one
reader per destination cluster for the process's lifetime, so a caller asking every half
second (the offset syncer, a reverse catching up) reads only what was stored since."""

from __future__ import annotations

import threading

from django.conf import settings
from django.utils.module_loading import import_string

from replication.core.errors import ReplicationError
from replication.kafka.connections import cluster_admin
from replication.models import KafkaCluster
from spark_jobs import translation

_readers: dict[tuple, translation.Reader] = {}
_readers_lock = threading.Lock()


def runs(cluster: KafkaCluster, topic_ids: set[str]) -> dict[tuple[str, int], translation.Runs]:
    """The runs of every partition of the mirror topics `topic_ids` on `cluster`, as stored
    now: {(topic id, partition): Runs}, none where offsets are identical."""
    config = cluster.connection_config()
    key = (settings.ISTHMUS_TRANSLATION_READER, *sorted(config.items()))
    with _readers_lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = import_string(settings.ISTHMUS_TRANSLATION_READER)(config)
        try:
            return reader.runs(topic_ids)
        except Exception as exc:  # read again from the start next time
            _readers.pop(key, None)
            reader.close()
            raise ReplicationError(
                f"Could not read the mirrors' offset translation ({translation.TOPIC}) on "
                f"{cluster.name}: {exc}"
            ) from exc


def of_topic(cluster: KafkaCluster, topic: str) -> dict[int, translation.Runs]:
    """Mirror topic `topic`'s runs on `cluster`, by partition."""
    topic_id = cluster_admin(cluster).describe_topic(topic).topic_id
    return {p: found for (_, p), found in runs(cluster, {topic_id}).items()}


def close_readers() -> None:
    """Close the readers, for a process about to end (or its clusters to stop): a reader left
    open keeps trying to reach its cluster until the process is gone."""
    with _readers_lock:
        for reader in _readers.values():
            reader.close()
        _readers.clear()
