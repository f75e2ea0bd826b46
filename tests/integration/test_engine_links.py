"""Links come and go in one engine: twenty links created one after the other each copy their
mirror exactly, without a restart of the engine, and when they are deleted its memory comes
back near where it was. Once it copies, every socket the engine opens is on loopback only
(issue 23: nothing listens beyond what it must)."""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Producer

from devstack import kafka
from infra import processes
from replication.core import redis_channel
from replication.cutover.link_deletion import delete_link
from replication.engine import process as engine_process
from replication.engine import status, supervise
from replication.topics.mirrors import create_mirror
from spark_jobs import control
from tests.mirror_checks import ACTOR, assert_exact_copy, caught_up, eventually, run_until_copied

pytestmark = pytest.mark.integration

LINKS = 20
RECORDS = 200
RECENT = int(time.time() * 1000) - 600_000


def _write(topic: str) -> None:
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(RECORDS):
        producer.produce(
            topic,
            key=str(i).encode(),
            value=b"v" * 100,
            headers=[("i", str(i).encode())],
            timestamp=RECENT + i,
        )
    assert producer.flush(30) == 0


def _engine_links() -> int:
    heartbeat = control.read_json(
        redis_channel.client(), control.engine_heartbeat_key(engine_process.engine_id())
    )
    return len((heartbeat or {}).get("links", {}))


def _threads(pid: int) -> int:
    """Threads of the engine's processes: each link adds a runner, a source watch and a copier
    per slot it has partitions in, and its producers' threads; a link gone takes them along."""
    root = psutil.Process(pid)
    total = 0
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):  # a Python worker that just ended
            total += process.num_threads()
    return total


def _thread_names(pid: int) -> collections.Counter:
    """The engine's threads by name (librdkafka names its own), to say what stayed."""
    names: collections.Counter = collections.Counter()
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        for task in Path(f"/proc/{process.pid}/task").glob("*/comm"):
            with contextlib.suppress(OSError):
                names[task.read_text().strip()] += 1
    return names


def _settled(pid: int) -> tuple[int, int]:
    """The engine's resident memory and threads once they stop moving (the least of a few
    samples)."""
    samples = []
    for _ in range(5):
        time.sleep(1)
        samples.append((processes.tree_rss(pid), _threads(pid)))
    return min(s[0] for s in samples), min(s[1] for s in samples)


def _listening(pid: int) -> list[tuple[str, int, str]]:
    """(address, port, process name) of every listening socket of `pid` and its descendants."""
    root = psutil.Process(pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    found.append((conn.laddr.ip, conn.laddr.port, proc.name()))
        except psutil.NoSuchProcess:
            pass  # a Python worker that just ended
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 on a dual-stack socket
    return (mapped or ip).is_loopback


def test_twenty_links_copy_exactly_in_one_engine_and_its_memory_comes_back_when_they_go(
    own_engine, make_link, make_topic, topic_name
):
    # The engine warm with one link, as a console is once it copies anything.
    topics = [f"{topic_name}-{i}" for i in range(LINKS + 1)]
    for topic in topics:
        make_topic(kafka.SOURCE, topic)
        _write(topic)
    # On the record path, whose links reading one source alike share a slot's consumer (the
    # batch path's fetches are each link's own).
    record_path = {"mirror.copy.path": "RECORD"}
    first = make_link(record_path)
    run_until_copied(first, [create_mirror(ACTOR, first, topics[0])], timeout=180)
    pid = status.status(first).pid
    # Copied: the driver's context, its block manager and the copiers' Python workers are up.
    listening = _listening(pid)
    assert any(name == "java" for _, _, name in listening), listening  # the driver's RPC
    assert all(_loopback(address) for address, _, _ in listening), listening
    before, threads_before = _settled(pid)
    names_before = _thread_names(pid)

    links = [make_link(record_path) for _ in range(LINKS)]
    mirrors = [
        create_mirror(ACTOR, link, topic) for link, topic in zip(links, topics[1:], strict=True)
    ]

    def all_copied() -> bool:
        for link in links:
            supervise.supervise(link)
        return all(caught_up(m) for m in mirrors)

    eventually(all_copied, 120, f"{LINKS} new links copying")
    with ThreadPoolExecutor(8) as pool:  # reading is what takes the time here
        copies = list(pool.map(lambda t: assert_exact_copy(t, t), topics))
    assert [len(c) for c in copies] == [RECORDS] * len(topics)
    assert {status.status(link).pid for link in [first, *links]} == {pid}, "the engine restarted"
    # The links read one source alike: each slot reads it through one consumer, not one a link.
    slots = status.engine_status().slots
    assert slots and all(slot.consumers == 1 for slot in slots if slot.links), slots
    full, threads_full = _settled(pid)

    for link in links:
        delete_link(ACTOR, link, force=True)
        supervise.stop(link)  # as the beat does for a link gone
    eventually(lambda: _engine_links() == 1, 60, "the deleted links leaving the engine")
    after, _ = _settled(pid)
    grew = full - before
    print(
        f"engine RSS {before >> 20} MiB, {full >> 20} with {LINKS} more links, {after >> 20} after"
    )
    assert status.status(first).pid == pid
    assert after - before < max(grew // 2, 64 << 20), (before, full, after)
    # What each link held is released: its threads (and its producer's) are gone again. A
    # client closing or the JVM's idle compiler and reaper threads go within a minute; a leak
    # (about six threads a link) never does.
    assert threads_full > threads_before + 3 * LINKS, (threads_before, threads_full)
    if not processes.wait_for(lambda: _threads(pid) <= threads_before + 5, 60, ignore=()):
        raise AssertionError(
            (threads_before, threads_full, _threads(pid), _thread_names(pid) - names_before)
        )
