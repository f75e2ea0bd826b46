"""The embedded stack's Redis with a replica and a Sentinel, the smallest high-availability
Redis (docs/deployment.md): `redis-replica` copies `redis`, and `redis-sentinel` (Debian's
`redis-sentinel`) promotes it when the master stops answering, and makes the old master a
replica of it once it is back. They start with the stack with ISTHMUS_DEVSTACK_REDIS_SENTINEL=1
(which also points the stack's processes at this Sentinel), or when named to
`manage.py devstack up`. Loopback only and without passwords, as the stack's Redis."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import redis
from django.conf import settings

from infra import redis_connect

REPLICA_PORT = 6381
SENTINEL_PORT = 26380
# One Sentinel: it decides alone (quorum 1). It calls the master down after 1 s without an
# answer (production's default, 30 s, is a long time without the control channel), and gives a
# failover that stalls 10 s before it tries again.
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 10_000


def master_name() -> str:
    """The name the Sentinel gives the master: the one Isthmus's clients ask it for."""
    sentinels = settings.REDIS_SENTINELS
    return sentinels["master"] if sentinels else redis_connect.DEFAULT_MASTER


def redis_server(port: int, folder: Path, *options: str) -> list[str]:
    """A Redis server on loopback, keeping its data in `folder`."""
    return [
        "redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(folder),
        "--save",
        "60 1",
        "--daemonize",
        "no",
        *options,
    ]


def config_file(folder: Path) -> Path:
    return folder / "sentinel.conf"


def write_config(
    folder: Path,
    port: int,
    master: str,
    pair: tuple[int, int],
    quorum: int = 1,
    down_after_ms: int = DOWN_AFTER_MS,
) -> None:
    """Sentinel's configuration in `folder`, written afresh at each start (Sentinel rewrites it
    as it learns the replicas and the other Sentinels): it watches whichever of the pair says
    it is the master now, so a Sentinel started again after a failover watches the promoted
    replica, not the old master."""
    path = config_file(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(
            [
                "bind 127.0.0.1",
                f"port {port}",
                "daemonize no",
                f"dir {path.parent}",
                f"sentinel monitor {master} 127.0.0.1 {master_now(pair)} {quorum}",
                f"sentinel down-after-milliseconds {master} {down_after_ms}",
                f"sentinel failover-timeout {master} {FAILOVER_TIMEOUT_MS}",
                f"sentinel parallel-syncs {master} 1",
                "",
            ]
        )
    )


def master_now(pair: tuple[int, int]) -> int:
    """The first of the pair that answers as a master (the `redis` part, when neither does)."""
    for port in pair:
        try:
            if role(port) == "master":
                return port
        except redis.RedisError:
            continue
    return pair[0]


def role(port: int) -> str:
    return str(redis.Redis(port=port, socket_timeout=1).info("replication")["role"])


def replica_ready(port: int) -> bool:
    """It copies its master, or was promoted and is the master now."""
    info = redis.Redis(port=port, socket_timeout=1).info("replication")
    return info["role"] == "master" or info.get("master_link_status") == "up"


def sentinel_ready(port: int, master: str, others: int = 0, replicas: int = 1) -> bool:
    """The Sentinel watches the master, knows `replicas` to promote and `others` Sentinels."""
    state = cast(dict, redis.Redis(port=port, socket_timeout=1).sentinel_master(master))
    return (
        bool(state["is_master"])
        and state["num-slaves"] >= replicas
        and state["num-other-sentinels"] >= others
    )
