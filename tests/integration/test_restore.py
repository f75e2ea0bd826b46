"""Truncate-and-restore, the failback after a failover, on the real clusters: exactly the
divergent records quarantined, only the delta copied, the restored topic equal to the promoted
one record by record (over translated offsets too), and a restore resumed or finished after its
worker and its stream were killed with kill -9. Its plan, refusals, each stored step redone and
the quarantine's review are tests/db/test_restore.py, on in-memory clusters."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import psutil
import pytest

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import read_pidfile, wait_for
from replication.core import redis_channel
from replication.cutover import promote, restore
from replication.engine import process
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.links import peer_of
from spark_jobs import control
from tests import leftovers
from tests.conftest import admin_config, start_celery_worker, stop_process
from tests.kafka_clients import ordinary, write_numbered, write_refused
from tests.mirror_checks import eventually, read_all, run_until_copied

pytestmark = pytest.mark.integration

ACTOR = audit.Actor.system("tests")
State = MirrorTopic.State


def test_truncate_and_restore_quarantines_the_divergent_records_and_copies_only_the_delta(
    copied_mirror, topic_name
):
    link, mirror = copied_mirror(records=100)
    (failed_over,) = promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    assert failed_over.state == State.STOPPED
    shared = read_all(kafka.DESTINATION.bootstrap, topic_name)
    # The old primary took these after all.
    write_numbered(ordinary(kafka.SOURCE), topic_name, 100, 7)
    divergent = [r for r in read_all(kafka.SOURCE.bootstrap, topic_name) if r not in shared]
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 200, 20)  # the new primary's own
    peer = peer_of(link)

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.error == "", outcome.error
    assert outcome.messages_truncated == 7 and len(divergent) == 7
    by_partition = {p["partition_id"]: p for p in outcome.partitions}
    assert {p: by_partition[p]["offset_truncated_to"] for p in (0, 1)} == {0: 50, 1: 50}
    # Nothing is lost: the quarantine holds exactly the divergent records, saying where from.
    quarantined = read_all(kafka.SOURCE.bootstrap, outcome.quarantine)
    assert [(r.key, r.value, r.timestamp) for r in quarantined] == [
        (r.key, r.value, r.timestamp) for r in divergent
    ]
    for q, r in zip(quarantined, divergent, strict=True):
        headers = dict(q.headers)
        assert headers["isthmus.origin.partition"] == str(r.partition).encode()
        assert headers["isthmus.origin.offset"] == str(r.offset).encode()
    # The old primary is a mirror of the promoted topic again, record by record.
    restored = peer.mirrors.get(mirror_topic=topic_name)
    assert restored.state == State.ACTIVE
    assert write_refused(kafka.SOURCE, topic_name)
    run_until_copied(peer, [restored])
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )

    # Only the delta crossed: the restored mirror's stream copied the new primary's 20, and
    # the result says so; the shared prefix was copied within the old primary, aside and back.
    # The link's report follows the data by up to a report's interval.
    def reported() -> dict | None:
        beat = control.read_json(redis_channel.client(), control.heartbeat_key(str(peer.link_id)))
        return beat if beat and beat["records"] >= 20 else None

    assert eventually(reported, 30, "the restored mirror's 20 records reported")["records"] == 20
    assert [p["records_to_copy"] for p in outcome.partitions] == [10, 10]
    shared_bytes = sum(len(r.key or b"") + len(r.value or b"") for r in shared)
    divergent_bytes = sum(len(r.key or b"") + len(r.value or b"") for r in divergent)
    assert outcome.bytes_copied_within_cluster == 2 * shared_bytes + divergent_bytes
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])


@pytest.fixture
def own_workers(transactional_db, tmp_path):
    """Real Celery workers (with beat) of the test's own, to kill: the session's worker stops
    taking tasks meanwhile, so the restore is done by these alone."""
    from console.celery import app

    session = [f"test-worker-{os.getpid()}@localhost"]
    app.control.cancel_consumer("celery", destination=session, reply=True, timeout=2)
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        folder = tmp_path / f"worker-{len(started)}"
        folder.mkdir()
        started.append(start_celery_worker(folder, f"restorer-{len(started)}-{os.getpid()}@lo"))
        return started[-1]

    yield start
    for proc in started:
        stop_process(proc)
    app.control.add_consumer("celery", destination=session, reply=True, timeout=2)


def _kill_9(proc: subprocess.Popen) -> None:
    """SIGKILL the worker and everything it started (its embedded beat): no clean-up runs."""
    family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    for each in family:
        with contextlib.suppress(psutil.NoSuchProcess):  # (one that ended by itself meanwhile)
            each.kill()
    psutil.wait_procs(family, timeout=10)


def test_kill_9_of_the_worker_setting_records_aside_and_of_the_stream_after_ends_a_restore_exactly(
    own_workers, copied_mirror, topic_name
):
    # Enough records that each step's copy, and the delta's, take seconds: time to kill.
    records, delta = 200_000, 400_000
    link, mirror = copied_mirror(records=records)
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    write_numbered(ordinary(kafka.SOURCE), topic_name, records, 50)  # the old primary's, diverging
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 1_000_000, delta)  # the new primary's
    peer, source = peer_of(link), KafkaAdmin(admin_config(kafka.SOURCE))
    holding = restore.HOLDING.format(topic=topic_name)

    def midway(state: str, topic: str):
        def check() -> bool:
            restoring = peer.mirrors.get(mirror_topic=topic_name)
            copied = sum(source.end_offsets(topic, 2).values())
            return restoring.state == state and 0 < copied < records

        return check

    worker = own_workers()
    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name])  # the worker's task
    assert wait_for(midway(State.PENDING_SETUP_FOR_RESTORE, holding), 120, 0.05), "no step 1"
    _kill_9(worker)  # mid-way through setting the shared records aside
    assert write_refused(kafka.SOURCE, topic_name)  # fenced, untouched, while it waits

    # The next worker takes the topic over once the dead one's lease has run out. (A kill in
    # each later stored step is tests/db/test_restore.py's, on in-memory clusters.)
    own_workers()
    assert wait_for(midway(State.PENDING_RESTORE, topic_name), 120, 0.05), "no step 2"
    assert write_refused(kafka.SOURCE, topic_name)  # half made, and no client can write to it

    # The engine (started by the worker's beat) killed mid-way through the restored mirror's
    # delta, watched for from the start (it copies in a second or two): the next one goes on
    # exactly.
    def copying_delta():
        held = sum(source.end_offsets(topic_name, 2).values())
        running = read_pidfile(process.pidfile())
        return running if records < held < records + delta else None

    running = wait_for(copying_delta, 240, 0.05)
    assert running, "the delta was never caught being copied"
    os.killpg(running.pid, signal.SIGKILL)
    eventually(
        lambda: peer.mirrors.get(mirror_topic=topic_name).state == State.ACTIVE, 120, "restored"
    )
    restored = peer.mirrors.get(mirror_topic=topic_name)
    assert restored.stop_report["records_kept"] == {"0": records // 2, "1": records // 2}
    quarantined = read_all(kafka.SOURCE.bootstrap, outcome.quarantine)
    assert sorted(int(r.key) for r in quarantined) == list(range(records, records + 50))  # once
    assert holding not in source.list_topic_names()
    run_until_copied(peer, [restored])
    assert read_all(kafka.SOURCE.bootstrap, topic_name) == read_all(
        kafka.DESTINATION.bootstrap, topic_name
    )
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])


def test_a_restore_rebuilds_the_promoted_topics_offsets_over_transaction_gaps_and_lost_records(
    copied_mirror, topic_name
):
    # The old primary's offsets differ from the mirror's: transaction markers and aborted
    # records (never copied), so the mirror translated them.
    link, mirror = copied_mirror(transactional=True)
    promote.stop_mirrors(ACTOR, link, [topic_name], promote.FAILOVER, wait=True)
    source = KafkaAdmin(admin_config(kafka.SOURCE))
    # Since the copy, retention took the old primary's five oldest records of partition 0.
    source.delete_records(topic_name, {0: 5})
    write_numbered(ordinary(kafka.SOURCE), topic_name, 100, 6)  # the old primary's, diverging
    write_numbered(ordinary(kafka.DESTINATION), topic_name, 200, 4)  # the new primary's
    peer = peer_of(link)

    (outcome,) = restore.truncate_and_restore(ACTOR, peer, [topic_name], wait=True)

    assert outcome.error == "", outcome.error
    assert outcome.messages_truncated == 6
    quarantined = read_all(kafka.SOURCE.bootstrap, outcome.quarantine)
    assert sorted(int(r.key) for r in quarantined) == list(range(100, 106))
    restored = peer.mirrors.get(mirror_topic=topic_name)
    run_until_copied(peer, [restored])
    # The old primary holds the promoted topic at the promoted topic's offsets (40 committed
    # records from offset 0, then the new primary's 2 per partition), partition 0 from its
    # sixth record on.
    promoted = read_all(kafka.DESTINATION.bootstrap, topic_name)
    held = read_all(kafka.SOURCE.bootstrap, topic_name)
    assert held == [r for r in promoted if r.partition == 1 or r.offset >= 5]
    assert source.start_offsets(topic_name, 2) == {0: 5, 1: 0}
    assert source.end_offsets(topic_name, 2) == {0: 42, 1: 42}
    leftovers.delete_topics(kafka.SOURCE, [outcome.quarantine])
