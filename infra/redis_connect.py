"""How every process reaches Redis: at REDIS_URL, or, with Sentinels given
(ISTHMUS_REDIS_SENTINELS), at whichever server the Sentinels name as the master now, so a
replica promoted when the master dies takes over without anyone changing a setting.

The console, Celery and the engine (its driver and each executor) build their clients here:
`client` for redis-py, `celery_url` and `celery_options` for Celery's broker and result
backend. Through Sentinel, REDIS_URL still gives the master's password and database number; its
host and port are not used. Without Sentinels, each client is made exactly as before they
existed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast
from urllib.parse import quote, urlsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection

DEFAULT_MASTER = "isthmus"

# While the master is dead and before a replica is promoted, a request waits for the new one:
# each connection retries, asking the Sentinels again each time, after 0.1, 0.2, 0.4, 0.8, 1.6
# and then 2 s, about 11 s in all (a failover with down-after-milliseconds 1000 was measured
# at about 3 s, docs/deployment.md).
FAILOVER_BACKOFF = ExponentialBackoff(cap=2.0, base=0.05)
FAILOVER_RETRIES = 9

# A task sent while the master is being replaced is sent again for as long (Celery's own policy
# gives up after 0.6 s).
CELERY_PUBLISH_RETRY = {
    "max_retries": 15,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 1,
}


class Sentinels(TypedDict):
    """Where the Sentinels are and which master of theirs is Isthmus's: JSON as it is, so the
    engine's spec carries it to the driver and the executors."""

    addresses: list[str]  # host:port
    master: str
    password: str  # the Sentinels' own (their requirepass), empty when they have none


def sentinels_from(environ: Mapping[str, str], default: str, url: str) -> Sentinels | None:
    """The Sentinels the environment names (ISTHMUS_REDIS_SENTINELS, `host:port,host:port`, else
    `default`; ISTHMUS_REDIS_SENTINEL_MASTER; ISTHMUS_REDIS_SENTINEL_PASSWORD), or None when it
    names none. ValueError says which setting is wrong and what to write, REDIS_URL (`url`)
    included: through Sentinel, it must be a redis:// URL."""
    text = environ.get("ISTHMUS_REDIS_SENTINELS", default)
    listed = [item.strip() for item in text.split(",") if item.strip()]
    if not listed:
        return None
    for item in listed:
        host, colon, port = item.rpartition(":")
        if not (colon and host and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(
                f"ISTHMUS_REDIS_SENTINELS={text!r} is not a list of Sentinels: give host:port of "
                "each, separated by commas (e.g. 10.0.0.1:26379,10.0.0.2:26379)."
            )
    master = environ.get("ISTHMUS_REDIS_SENTINEL_MASTER", DEFAULT_MASTER).strip()
    if not master:
        raise ValueError(
            "ISTHMUS_REDIS_SENTINEL_MASTER is empty: name the master the Sentinels watch (their "
            f"'sentinel monitor <name> ...'), or unset it for {DEFAULT_MASTER!r}."
        )
    master_options(url)  # refused at start, not at the first connection
    password = environ.get("ISTHMUS_REDIS_SENTINEL_PASSWORD", "")
    return {"addresses": listed, "master": master, "password": password}


def master_options(url: str) -> dict[str, Any]:
    """What REDIS_URL still says through Sentinel: the master's credentials and database."""
    if urlsplit(url).scheme != "redis":
        raise ValueError(
            f"REDIS_URL={_hide_password(url)!r}: with ISTHMUS_REDIS_SENTINELS set it must be a "
            "redis:// URL (only its password and database number are used: the Sentinels name "
            "the master); TLS or a Unix socket through Sentinel is not supported."
        )
    found = redis.connection.parse_url(url)  # type: ignore[no-untyped-call]
    return {key: found[key] for key in ("username", "password", "db") if key in found}


def _hide_password(url: str) -> str:
    parts = urlsplit(url)
    return url.replace(f":{parts.password}@", ":***@") if parts.password else url


def _hosts(sentinels: Sentinels) -> list[tuple[str, int]]:
    pairs = (address.rpartition(":") for address in sentinels["addresses"])
    return [(host, int(port)) for host, _, port in pairs]


class _BlockingSentinelPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """Sentinel's pool whose threads wait for a free connection, as the engine's do."""


class _MasterConnection(SentinelManagedConnection):
    """A connection to the master that asks the Sentinels where it is whenever it connects.
    redis-py's own connects again, after a command failed on it, at the address it had: the
    dead master's, until its retries run out (redis/redis-py#3874, open). One such retry each
    time: the command's own retries, each asking the Sentinels again, wait out the failover."""

    def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if self._sock:
            return
        self.host, self.port = self.connection_pool.get_master_address()
        super().connect_check_health(check_health, retry_socket_connect=False)


def client(
    url: str,
    sentinels: Sentinels | None,
    timeout: float,
    *,
    connections: int | None = None,
    connection_wait: float = 10.0,
) -> redis.Redis:
    """A client of Redis at `url`, or of the master `sentinels` name; `timeout` bounds each
    request. Given `connections`, at most that many at once, a thread waiting up to
    `connection_wait` s for one (redis-py's own pool refuses a request beyond its limit)."""
    limits = {"max_connections": connections, "timeout": connection_wait} if connections else {}
    sockets = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    if sentinels is None:
        if not connections:
            return redis.Redis.from_url(url, **sockets)
        pool = redis.BlockingConnectionPool.from_url(url, **limits, **sockets)
        return redis.Redis(connection_pool=pool)
    manager = Sentinel(  # type: ignore[no-untyped-call]
        _hosts(sentinels),
        sentinel_kwargs={**sockets, "password": sentinels["password"] or None},
        **sockets,
    )
    return cast(
        redis.Redis,
        manager.master_for(  # type: ignore[no-untyped-call]
            sentinels["master"],
            connection_pool_class=_BlockingSentinelPool if connections else SentinelConnectionPool,
            connection_class=_MasterConnection,
            retry=Retry(FAILOVER_BACKOFF, FAILOVER_RETRIES),
            **limits,
            **master_options(url),
        ),
    )


def celery_url(url: str, sentinels: Sentinels | None) -> str:
    """Celery's broker and result backend: REDIS_URL, or each Sentinel as a `sentinel://` URL
    (joined by `;`) carrying the master's credentials and database."""
    if sentinels is None:
        return url
    options = master_options(url)
    user = quote(options.get("username") or "", safe="")
    password = options.get("password")
    login = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
    return ";".join(
        f"sentinel://{login}{address}/{options.get('db', 0)}" for address in sentinels["addresses"]
    )


def celery_options(sentinels: Sentinels, timeout: float) -> dict[str, Any]:
    """Celery's transport options for the broker and the result backend through Sentinel."""
    return {
        "master_name": sentinels["master"],
        "sentinel_kwargs": {
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "password": sentinels["password"] or None,
        },
    }
