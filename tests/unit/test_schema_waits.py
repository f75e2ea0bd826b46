"""A mirror's schema waits as its page shows them beside its partitions: only of partitions
still behind. The stream's last word may say a partition waits for a schema after the record
was copied; a caught-up partition waits for nothing, and the page said both at once."""

from replication.observe.lag import MirrorStatus
from replication.observe.lag_partitions import PartitionStatus


def _partition(n: int, lag: int, wait: str) -> PartitionStatus:
    # source end 10, mirror end 10 - lag: `lag` records behind
    return PartitionStatus(n, "ACTIVE", 10 - lag, 10, schema_wait=wait)


def test_a_caught_up_partition_shows_no_schema_wait():
    status = MirrorStatus(
        mirror=None,  # type: ignore[arg-type]  (not read)
        partitions=[
            _partition(0, 0, "partition 0 waits for schema 7"),
            _partition(1, 3, "partition 1 waits for schema 8"),
            _partition(2, 0, ""),
        ],
    )
    assert status.schema_waits == ["partition 1 waits for schema 8"]
