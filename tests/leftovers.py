"""What a test session leaves on the shared clusters, in Redis and under var/, and its removal.

`make test` may run beside a user's `make demo`, and beside other test runs, on the same
clusters and Redis, so a session removes only what it provably made:

- every topic and consumer group a test names carries the session's marker `MARK`,
  `itest-<start time, 8 hex digits><4 random hex digits>` (`unique_name`, the `topic_name`
  fixture); a mirror takes its source topic's name (with a link's prefix at most), so it
  carries the marker too, and so do ACLs on such topics;
- the links it saves are noted in its `Ledger`: their Redis keys carry the link id; its console
  (its test database) has an engine of its own, whose folder (var/streams/engine-<id>),
  processes and Redis keys carry the engine's id;
- Celery keys new in the tests' own Redis database (ISTHMUS_TEST_REDIS_DB) are its worker's, and
  processes other than pytest on that database (workers, their beats, web servers) are its own.

At the end of the session `sweep` removes all of that, failed tests or not, and `remaining`
must then find nothing. A session that was killed cannot sweep: a later one removes markers
older than `STALE_AFTER_S`, which no live session can be (CI gives a whole run 90 minutes).
Topics without a marker, from before the marker, are never touched: nothing proves them ours.

Not removed: the destination's `_isthmus-offset-translation` topic (shared with every
console on the cluster and kept forever by design) and the translation entries test mirrors
wrote into it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import redis
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    ResourceType,
)
from django.conf import settings

from devstack import kafka
from infra import processes
from infra.admin_client import AdminClient
from infra.kafka_acls import acl_filter, exact_filter

STALE_AFTER_S = 12 * 3600
_MARK = re.compile(r"itest-([0-9a-f]{8})[0-9a-f]{4}")
MARK = f"itest-{int(time.time()):08x}{secrets.token_hex(2)}"

Owned = Callable[[str], bool]
# What Celery (kombu's Redis transport) keeps in its database: bindings, queues, results.
_CELERY_KEYS = ["_kombu.*", "celery*", "unacked*"]


def unique_name(label: str) -> str:
    """A topic, group or stream name no other test or session uses, carrying the marker."""
    return f"{MARK}-{label}-{secrets.token_hex(4)}"


def stale(name: str, now: float | None = None) -> bool:
    """`name` carries the marker of a session that started more than STALE_AFTER_S ago."""
    now = time.time() if now is None else now
    return any(now - int(m.group(1), 16) > STALE_AFTER_S for m in _MARK.finditer(name))


def admin_config(node: kafka.KafkaNode) -> dict[str, str]:
    """The privileged `admin` principal's client config for `node`."""
    return kafka.sasl_client_config(node, settings.VAR_DIR, user="admin")


def _admin(node: kafka.KafkaNode) -> AdminClient:
    # The caller keeps the client until its futures are answered: a client dropped before its
    # request went out does nothing (this is how `make_topic` left thousands of topics).
    return AdminClient({**admin_config(node), "log_level": 0})


def _answer(future, *harmless: int, timeout: float = 60, default: object = None):
    """The future's result; `default` when it failed with one of the `harmless` errors."""
    try:
        return future.result(timeout=timeout)
    except KafkaException as exc:
        if not (exc.args and isinstance(exc.args[0], KafkaError)):
            raise
        if exc.args[0].code() not in harmless:
            raise
        return default


# Topics, ACLs and consumer groups. ----------------------------------------------------------


def topics(node: kafka.KafkaNode, owned: Owned) -> list[str]:
    admin = _admin(node)
    return sorted(t for t in admin.list_topics(timeout=30).topics if owned(t))


def delete_topics(node: kafka.KafkaNode, names: Iterable[str]) -> None:
    """Delete topics of this session's, and every ACL on them, waiting for each answer."""
    names = sorted(set(names))
    if not names:
        return
    admin = _admin(node)
    for future in admin.delete_topics(names, operation_timeout=30).values():
        _answer(future, KafkaError.UNKNOWN_TOPIC_OR_PART)
    delete_acls(node, acls(node, set(names).__contains__))


_TOPIC_ACLS = acl_filter(ResourceType.TOPIC)


def acls(node: kafka.KafkaNode, owned: Owned) -> list[AclBinding]:
    """ACLs on topics `owned` names (they outlive a deleted topic)."""
    admin = _admin(node)
    found = _answer(admin.describe_acls(_TOPIC_ACLS), KafkaError.SECURITY_DISABLED) or []
    return sorted((b for b in found if owned(b.name)), key=str)


def delete_acls(node: kafka.KafkaNode, bindings: list[AclBinding]) -> None:
    if not bindings:
        return
    admin = _admin(node)
    for future in admin.delete_acls([exact_filter(b) for b in bindings]).values():
        _answer(future)


def groups(node: kafka.KafkaNode, owned: Owned) -> list[str]:
    admin = _admin(node)
    listed = _answer(admin.list_consumer_groups())
    return sorted(g.group_id for g in listed.valid if owned(g.group_id))


def delete_groups(node: kafka.KafkaNode, ids: list[str]) -> list[str]:
    """Delete the groups no consumer uses; returns those deleted (one in use is left for
    `remaining` to report)."""
    if not ids:
        return []
    admin = _admin(node)
    futures = admin.delete_consumer_groups(ids)
    gone = KafkaError.GROUP_ID_NOT_FOUND, KafkaError.NON_EMPTY_GROUP
    return [g for g, future in futures.items() if _answer(future, *gone, default=False) is None]


# Links: their streams' processes and folders, and their Redis keys. -------------------------


@dataclass
class Ledger:
    """What the session made that carries no marker: its links."""

    test_database: str  # what a stream of the tests' console writes as its owner
    redis_urls: list[str]  # the tests' Redis database and the user's
    links: set[str] = field(default_factory=set)
    mark: str = MARK
    celery_keys_before: set[bytes] | None = None  # in the tests' Redis database (the first)
    workers_redis_url: str | None = None  # the REDIS_URL of the session's own processes

    def owned(self, name: str) -> bool:
        return self.mark in name or any(link in name for link in self.links)

    @property
    def engine(self) -> str:
        from replication.engine import process

        return process.engine_id(self.test_database)

    def stream_folders(self) -> list[Path]:
        """The folder of the tests' console's engine."""
        from replication.engine import process

        folder = process.engine_folder(self.test_database)
        return [folder] if folder.exists() else []

    def redis_keys(self, owned: Owned) -> list[tuple[str, bytes]]:
        patterns = [f"isthmus:stream:{link}:*" for link in self.links] + ["*itest-*"]
        # The links the supervisor of the tests' console saw (replication.engine.process.seen_key).
        seen = f"isthmus:streams-seen:{self.test_database}".encode()
        found = []
        for url in self.redis_urls:
            client = redis.Redis.from_url(url, socket_timeout=10)
            for pattern in patterns:
                found += [
                    (url, key)
                    for key in client.scan_iter(match=pattern, count=1000)
                    if owned(key.decode(errors="replace"))
                ]
            if owned == self.owned:  # the session's own console's keys
                engine = f"isthmus:engine:{self.engine}:*"
                found += [(url, key) for key in client.scan_iter(match=engine, count=1000)]
                if client.exists(seen):
                    found.append((url, seen))
        return sorted(set(found))

    def claim_test_redis(self) -> None:
        """Note the Celery keys (queues, bindings, results) the tests' Redis database already
        holds: those the session's worker and tasks add are removed at its end, and so are the
        processes it started there. That database is the session's own (another run beside it
        takes another), never the user's."""
        if self.redis_urls[0] not in self.redis_urls[1:]:
            self.celery_keys_before = set(self._celery_keys())
            self.workers_redis_url = self.redis_urls[0]

    def _celery_keys(self) -> list[bytes]:
        client = redis.Redis.from_url(self.redis_urls[0], socket_timeout=10)
        return [k for p in _CELERY_KEYS for k in client.scan_iter(match=p, count=1000)]

    def new_celery_keys(self) -> list[tuple[str, bytes]]:
        if self.celery_keys_before is None:
            return []
        new = set(self._celery_keys()) - self.celery_keys_before
        return [(self.redis_urls[0], key) for key in sorted(new)]

    def workers(self) -> list[psutil.Process]:
        """Live processes other than this one on the tests' own Redis database: Celery workers,
        their beats and web servers the tests started (only a test starts one there)."""
        if self.workers_redis_url is None:
            return []
        found = []
        for proc in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error):
                if (
                    proc.pid != os.getpid()
                    and proc.environ().get("REDIS_URL") == self.workers_redis_url
                ):
                    found.append(proc)
        return found

    def processes(self) -> list[psutil.Process]:
        """Live processes of the session's engine (Spark's included)."""
        wanted = [f"streams/engine-{self.engine}/"]
        found = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            line = " ".join(proc.info["cmdline"] or [])
            if any(w in line for w in wanted) and proc.pid != os.getpid():
                found.append(proc)
        return found


def describe(proc: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return f"{proc.pid}: {' '.join(proc.cmdline())[:200]}"
    return f"{proc.pid}: (gone)"


def stop_streams(ledger: Ledger, folders: Iterable[Path]) -> None:
    """Stop the session's engine: through its pid file, then anything of it still running
    without one, each with every process of its session (Spark's Python driver and workers)."""
    for folder in folders:
        processes.stop(folder / "engine.pid", timeout=15)
    # The engine runs in a session of its own; never this one (the tests' own processes).
    sessions = {_session_of(proc.pid) for proc in ledger.processes()} - {None, os.getsid(0)}
    _stop([p for p in psutil.process_iter() if _session_of(p.pid) in sessions])


def _stop(procs: list[psutil.Process]) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=15)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)


def _session_of(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        return os.getsid(pid)
    return None


# The session's end. -------------------------------------------------------------------------


def sweep(ledger: Ledger) -> list[str]:
    """Remove what this session made from both clusters, its links' streams, folders and
    Redis keys; returns what it removed."""
    folders = ledger.stream_folders()
    stop_streams(ledger, folders)  # first: nothing then writes, grows or re-creates a mirror
    workers = ledger.workers()  # then nothing sends tasks to the tests' Redis any more
    _stop(workers)
    removed = [f"process {describe(p)}" for p in workers]
    removed += _sweep(ledger, ledger.owned)
    for url, key in ledger.new_celery_keys():  # expected of any session with a worker: unsaid
        redis.Redis.from_url(url).delete(key)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(f"folder {folder}")
    return removed


def sweep_stale(ledger: Ledger) -> list[str]:
    """Remove what sessions killed long ago left (their markers are older than
    STALE_AFTER_S); returns what it removed."""
    return _sweep(ledger, stale)


def _sweep(ledger: Ledger, owned: Owned) -> list[str]:
    removed: list[str] = []
    for node in kafka.NODES:
        names = topics(node, owned)
        delete_topics(node, names)
        bindings = acls(node, owned)  # those of topics already gone
        delete_acls(node, bindings)
        ids = delete_groups(node, groups(node, owned))
        removed += [f"{node.name} topic {t}" for t in names]
        removed += [f"{node.name} ACL {b}" for b in bindings]
        removed += [f"{node.name} group {g}" for g in ids]
    for url, key in ledger.redis_keys(owned):
        redis.Redis.from_url(url).delete(key)
        removed.append(f"Redis {url} key {key.decode(errors='replace')}")
    return removed


def remaining(ledger: Ledger, wait: float = 60) -> list[str]:
    """What of the session is still there; topics being deleted get `wait` seconds to go."""

    def topics_left() -> list[str]:
        return [f"{n.name} topic {t}" for n in kafka.NODES for t in topics(n, ledger.owned)]

    processes.wait_for(lambda: not topics_left(), wait, 1, ignore=())
    left = topics_left()
    for node in kafka.NODES:
        left += [f"{node.name} ACL {b}" for b in acls(node, ledger.owned)]
        left += [f"{node.name} group {g}" for g in groups(node, ledger.owned)]
    left += [
        f"Redis {u} key {k.decode(errors='replace')}" for u, k in ledger.redis_keys(ledger.owned)
    ]
    left += [f"Redis {u} key {k.decode(errors='replace')}" for u, k in ledger.new_celery_keys()]
    left += [f"folder {f}" for f in ledger.stream_folders()]
    left += [f"process {describe(p)}" for p in ledger.processes() + ledger.workers()]
    return left
