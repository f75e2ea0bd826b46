"""The Redis connection shared by the console and the streams (control and progress channel)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis
from django.conf import settings

from infra import redis_connect
from replication.core.errors import conflict, unavailable

_clients: dict[str, redis.Redis] = {}

# A lock whose holder died (a worker killed with its host) is free this long after: its holder
# renews it while it works (`_kept`), so how long the work may take is no longer the wait.
HOLDER_GONE_S = 10.0


def client() -> redis.Redis:
    """The process's client of REDIS_URL (or of the master the Sentinels name, which waits out
    a failover: infra/redis_connect.py). One per process, so its connections are pooled: a
    page that reads the reports of 50 links opens no connection per read (each new connection
    costs a handshake, and redis-py reads its own package metadata for it). The pool drops
    connections that broke, and starts afresh in a forked child."""
    url, sentinels = settings.REDIS_URL, settings.REDIS_SENTINELS
    key = f"{url} {sentinels}"
    found = _clients.get(key)
    if found is None:
        found = _clients[key] = redis_connect.client(url, sentinels, 2)
    return found


def _where() -> str:
    sentinels = settings.REDIS_SENTINELS
    if sentinels is None:
        return f"Redis at {settings.REDIS_URL}"
    named = ", ".join(sentinels["addresses"])
    return f"Redis (the master {sentinels['master']!r} of the Sentinels at {named})"


def ping() -> dict:
    try:
        client().ping()
        return {"ok": True}
    except redis.RedisError as exc:
        return {"ok": False, "error": f"{_where()} does not answer: {exc}"}


@contextmanager
def held(name: str, hold_s: float, *, wait: float | None = None) -> Iterator[bool]:
    """The one kind of lock shared by every process: yields whether it was taken, at once or
    (given `wait`) within `wait` seconds. Its holder keeps it while the block runs, for at most
    `hold_s`; should the holder die, it is free within HOLDER_GONE_S. A Redis that does not
    answer raises redis.RedisError."""
    lock = _lock(f"isthmus:{name}", hold_s)
    acquired = lock.acquire(blocking=wait is not None, blocking_timeout=wait)
    try:
        with _kept(lock, hold_s) if acquired else contextlib.nullcontext():
            yield acquired
    finally:
        _release(lock, acquired)


def _lock(key: str, hold_s: float) -> redis.lock.Lock:
    # Not thread-local: `_kept`'s thread renews it with the holder's token.
    return client().lock(key, timeout=min(hold_s, HOLDER_GONE_S), thread_local=False)


@contextmanager
def _kept(lock: redis.lock.Lock, hold_s: float) -> Iterator[None]:
    """Renew `lock` every third of its timeout while the block runs, until `hold_s` after it
    was taken: a holder that dies stops renewing it, and a hung one lets go after `hold_s`."""
    timeout = lock.timeout or hold_s
    if hold_s <= timeout:
        yield
        return
    done = threading.Event()

    def renew() -> None:
        until = time.monotonic() + hold_s - timeout
        while not done.wait(timeout / 3) and time.monotonic() < until:
            try:
                lock.reacquire()
            except redis.exceptions.LockError:  # it expired: another may hold it now
                return
            except redis.RedisError:  # Redis failing over: the next round tries again
                continue

    keeper = threading.Thread(target=renew, name=f"renews {lock.name}", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        done.set()


@contextmanager
def lease(name: str, hold_s: float) -> Iterator[Callable[[], None] | None]:
    """A lock for long work, held while its holder shows it is alive: yields `renew`, to call
    often (it asks Redis at most once a second and raises RuntimeError once the lock was lost
    to another holder), or None when another holds it. A holder that dies frees it within
    `hold_s`, so the next one goes on soon, not after the longest the work could take."""
    lock = client().lock(f"isthmus:{name}", timeout=hold_s)
    acquired = lock.acquire(blocking=False)
    renewed = [time.monotonic()]

    def renew() -> None:
        if time.monotonic() - renewed[0] < 1:
            return
        try:
            lock.reacquire()
        except redis.exceptions.LockError as exc:
            raise RuntimeError(f"another worker took over {name}") from exc
        renewed[0] = time.monotonic()

    try:
        yield renew if acquired else None
    finally:
        _release(lock, acquired)


# Keeps the key for ARGV[1] if it holds it already, else takes it if nobody does.
_CLAIM = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2]) and 1 or 0
"""
# Deletes the key only if ARGV[1] still holds it.
_GIVE_UP = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def claim(name: str, holder: str, hold_s: float) -> bool:
    """A role that one process at a time holds across many calls (the active beat), where
    `held` and `lease` hold a lock for one block of work: takes it for `holder` when nobody
    holds it, or keeps it `hold_s` seconds more when `holder` does; returns whether `holder`
    holds it now. A holder that stops claiming loses it after `hold_s`. A Redis that does not
    answer raises redis.RedisError."""
    r = client()
    return bool(r.eval(_CLAIM, 1, f"isthmus:{name}", holder, int(hold_s * 1000)))


def holder(name: str) -> str | None:
    """Who holds the role `name` now (what its holder gave `claim`), None when nobody does."""
    found = client().get(f"isthmus:{name}")
    return found.decode() if isinstance(found, bytes) else found


def give_up(name: str, holder: str) -> None:
    """`holder` lets go of the role `name` (if it still holds it), so another takes it at once."""
    client().eval(_GIVE_UP, 1, f"isthmus:{name}", holder)


def _release(lock, acquired: bool) -> None:
    if acquired:
        with contextlib.suppress(redis.RedisError):  # expired meanwhile: nothing to free
            lock.release()


@contextmanager
def only_one(name: str, busy: str, *, hold_s: float = 600) -> Iterator[None]:
    """Run the block in one request at a time: another one meanwhile is refused with `busy`
    (409), not queued. A request whose process died lets go within HOLDER_GONE_S."""
    lock = _lock(f"isthmus:only-one:{name}", hold_s)
    try:
        acquired = lock.acquire(blocking=False)
    except redis.RedisError as exc:
        raise unavailable(f"{_where()} does not answer ({exc}); nothing was changed.") from exc
    try:
        if not acquired:
            raise conflict(busy)
        with _kept(lock, hold_s):
            yield
    finally:
        _release(lock, acquired)
