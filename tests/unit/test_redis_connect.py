"""Redis through Sentinel (infra/redis_connect.py): the settings read, and the clients made of
them; without Sentinels, every client as before they existed. (Failing over for real:
tests/ha/test_redis_sentinel.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from redis.sentinel import SentinelConnectionPool

from infra import redis_connect

ROOT = Path(__file__).resolve().parents[2]
URL = "redis://:s3cret@10.0.0.9:6379/4"
SENTINELS: redis_connect.Sentinels = {
    "addresses": ["10.0.0.1:26379", "sentinel-2:26380"],
    "master": "isthmus",
    "password": "watch",
}


def _sentinels(**env: str) -> redis_connect.Sentinels | None:
    return redis_connect.sentinels_from(env, "", URL)


def test_no_sentinels_means_none():
    assert _sentinels() is None
    assert _sentinels(ISTHMUS_REDIS_SENTINELS=" , ") is None


def test_the_sentinels_master_and_password_are_read():
    found = _sentinels(
        ISTHMUS_REDIS_SENTINELS="10.0.0.1:26379, sentinel-2:26380",
        ISTHMUS_REDIS_SENTINEL_PASSWORD="watch",
    )
    assert found == SENTINELS
    assert _sentinels(ISTHMUS_REDIS_SENTINELS="h:1", ISTHMUS_REDIS_SENTINEL_MASTER=" other ") == {
        "addresses": ["h:1"],
        "master": "other",
        "password": "",
    }


def test_the_embedded_stacks_sentinel_is_the_default_given():
    found = redis_connect.sentinels_from({}, "127.0.0.1:26380", URL)
    assert found is not None and found["addresses"] == ["127.0.0.1:26380"]


@pytest.mark.parametrize("text", ["10.0.0.1", "10.0.0.1:port", ":26379", "h:0", "h:70000"])
def test_a_sentinel_without_host_and_port_is_refused_saying_what_to_write(text):
    with pytest.raises(ValueError, match=r"ISTHMUS_REDIS_SENTINELS=.* give host:port of each"):
        _sentinels(ISTHMUS_REDIS_SENTINELS=f"h:1,{text}")


def test_an_empty_master_name_is_refused():
    with pytest.raises(ValueError, match="ISTHMUS_REDIS_SENTINEL_MASTER is empty"):
        _sentinels(ISTHMUS_REDIS_SENTINELS="h:1", ISTHMUS_REDIS_SENTINEL_MASTER=" ")


@pytest.mark.parametrize("url", ["rediss://:pw@h:6379/0", "unix:///run/redis.sock"])
def test_through_sentinel_redis_url_must_be_plain_redis(url):
    with pytest.raises(ValueError, match="must be a redis:// URL") as refused:
        redis_connect.sentinels_from({"ISTHMUS_REDIS_SENTINELS": "h:1"}, "", url)
    assert "pw" not in str(refused.value)  # the password is not shown


def test_without_sentinels_the_clients_are_as_before():
    plain = redis_connect.client(URL, None, 2)
    kwargs = plain.connection_pool.connection_kwargs
    assert type(plain.connection_pool) is redis.ConnectionPool
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == (
        "10.0.0.9",
        6379,
        4,
        "s3cret",
    )
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 2
    engine = redis_connect.client(URL, None, 1, connections=32, connection_wait=10)
    assert type(engine.connection_pool) is redis.BlockingConnectionPool
    assert (engine.connection_pool.max_connections, engine.connection_pool.timeout) == (32, 10)


def test_through_sentinels_a_client_asks_them_for_the_master():
    console = redis_connect.client(URL, SENTINELS, 2)
    pool = console.connection_pool
    assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "isthmus"
    sentinels = pool.sentinel_manager.sentinels
    assert [s.connection_pool.connection_kwargs["host"] for s in sentinels] == [
        "10.0.0.1",
        "sentinel-2",
    ]
    assert {s.connection_pool.connection_kwargs["password"] for s in sentinels} == {"watch"}
    # The master's password and database are REDIS_URL's; its address is the Sentinels'.
    kwargs = pool.connection_kwargs
    assert (kwargs["db"], kwargs["password"], kwargs.get("host")) == (4, "s3cret", None)
    assert kwargs["retry"].get_retries() == redis_connect.FAILOVER_RETRIES
    # Each connection asks the Sentinels again, not only the pool's first (redis-py#3874).
    assert pool.connection_class is redis_connect._MasterConnection
    engine = redis_connect.client(URL, SENTINELS, 1, connections=32, connection_wait=10)
    assert isinstance(engine.connection_pool, redis.BlockingConnectionPool)
    assert isinstance(engine.connection_pool, SentinelConnectionPool)
    assert engine.connection_pool.max_connections == 32


def test_celery_reaches_the_master_through_each_sentinel():
    assert redis_connect.celery_url(URL, None) == URL
    assert redis_connect.celery_url(URL, SENTINELS) == (
        "sentinel://:s3cret@10.0.0.1:26379/4;sentinel://:s3cret@sentinel-2:26380/4"
    )
    assert redis_connect.celery_url("redis://u:p%40ss@h/0", SENTINELS).startswith(
        "sentinel://u:p%40ss@10.0.0.1:26379/0;"
    )
    assert redis_connect.celery_options(SENTINELS, 2) == {
        "master_name": "isthmus",
        "sentinel_kwargs": {"socket_timeout": 2, "socket_connect_timeout": 2, "password": "watch"},
    }


READ = (
    "import json, console.settings as s; print(json.dumps([s.REDIS_SENTINELS, s.CELERY_BROKER_URL,"
    " s.CELERY_RESULT_BACKEND, getattr(s, 'CELERY_BROKER_TRANSPORT_OPTIONS', None),"
    " getattr(s, 'CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS', None)]))"
)


def _settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    unset = ("ISTHMUS_REDIS_SENTINELS", "ISTHMUS_DEVSTACK_REDIS_SENTINEL", "REDIS_URL")
    base = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "-c", READ],
        cwd=ROOT,
        env={**base, "ISTHMUS_VAR_DIR": str(tmp_path), "ISTHMUS_DEVSTACK_PORT_OFFSET": "0", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_settings_without_sentinels_are_as_before(tmp_path):
    result = _settings(tmp_path)
    assert result.returncode == 0, result.stderr
    url = "redis://127.0.0.1:6380/0"
    assert json.loads(result.stdout) == [None, url, url, None, None]


def test_settings_send_celery_and_every_client_through_the_sentinels(tmp_path):
    result = _settings(
        tmp_path, ISTHMUS_REDIS_SENTINELS="s1:26379,s2:26379", REDIS_URL="redis://:pw@x:1/2"
    )
    assert result.returncode == 0, result.stderr
    sentinels, broker, backend, options, backend_options = json.loads(result.stdout)
    assert sentinels == {"addresses": ["s1:26379", "s2:26379"], "master": "isthmus", "password": ""}
    assert broker == backend == "sentinel://:pw@s1:26379/2;sentinel://:pw@s2:26379/2"
    assert options == backend_options and options["master_name"] == "isthmus"


def test_the_embedded_stacks_sentinel_with_its_setting(tmp_path):
    result = _settings(tmp_path, ISTHMUS_DEVSTACK_REDIS_SENTINEL="1")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["addresses"] == ["127.0.0.1:26380"]


def test_bad_sentinel_settings_stop_start_up_saying_what_to_set(tmp_path):
    result = _settings(tmp_path, ISTHMUS_REDIS_SENTINELS="s1")
    assert result.returncode != 0
    assert "ImproperlyConfigured: ISTHMUS_REDIS_SENTINELS='s1' is not a list" in result.stderr
