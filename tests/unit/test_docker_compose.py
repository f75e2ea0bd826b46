import os
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT


def compose_command() -> list[str] | None:
    """`docker compose` (the plugin) or the standalone `docker-compose`, whichever works."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


PASSWORDS = {
    name: "test-value"
    for name in (
        "ISTHMUS_ADMIN_PASSWORD",
        "ISTHMUS_REPLICATOR_PASSWORD",
        "POSTGRES_PASSWORD",
        "SECRET_KEY",
        "ISTHMUS_ENCRYPTION_KEY",
    )
}


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client on this machine")
def test_the_compose_file_is_valid_and_has_the_whole_stack():
    env = {**os.environ, **PASSWORDS}
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yaml"), "config", "--services"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) >= {
        "source",
        "destination",
        "source-registry",
        "destination-registry",
        "redis",
        "postgres",
        "web",
        "worker",
        "scenarios",
        "beat",
        "gateway",
    }


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client on this machine")
def test_the_compose_file_refuses_to_start_without_passwords():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ISTHMUS_", "POSTGRES_"))}
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd="/",
    )
    assert result.returncode != 0
    assert "set it in .env" in result.stderr


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client on this machine")
def test_the_ha_profile_has_two_of_each_isthmus_process_and_redis_through_three_sentinels():
    sentinels = "redis-sentinel-1:26379,redis-sentinel-2:26379,redis-sentinel-3:26379"
    env = {
        **os.environ,
        **PASSWORDS,
        "COMPOSE_PROFILES": "ha",
        "ISTHMUS_REDIS_SENTINELS": sentinels,
    }
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    in_ha = {name for name, service in services.items() if "ha" in service.get("profiles", [])}
    assert in_ha == {
        "web-2",
        "worker-2",
        "beat-2",
        "redis-replica",
        "redis-sentinel-1",
        "redis-sentinel-2",
        "redis-sentinel-3",
    }
    for name in ("web", "web-2", "worker", "worker-2", "beat", "beat-2"):
        assert services[name]["environment"]["ISTHMUS_REDIS_SENTINELS"] == sentinels, name
    # Each worker starts the engine from a folder of its own, as on hosts of their own.
    stream_dirs = {
        services[w]["environment"].get("ISTHMUS_STREAM_DIR") for w in ("worker", "worker-2")
    }
    assert len(stream_dirs) == 2
    assert services["worker"]["hostname"] != services["worker-2"]["hostname"]
    for n in (1, 2, 3):  # a majority of the three decides a failover
        command = _words(services[f"redis-sentinel-{n}"]["command"])
        assert "sentinel monitor isthmus redis 6379 2" in command
    assert "--replicaof redis 6379" in _words(services["redis-replica"]["command"])
    # Both consoles answer on loopback only.
    published = [p for name in ("web", "web-2") for p in services[name]["ports"]]
    assert {_host_ip(p) for p in published} == {"127.0.0.1"}


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client on this machine")
def test_every_gateway_proxy_runs_on_the_gateway_service_routing_to_listeners_in_the_network():
    result = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **PASSWORDS},
    )
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    # The gateways' host runs the proxies itself; every other Isthmus process asks it.
    gateway = services["gateway"]
    assert gateway["environment"]["ISTHMUS_GATEWAY_QUEUE"] == ""
    command = _words(gateway["command"])
    assert "manage.py start_gateways" in command and "--queues gateways" in command
    for name in ("web", "worker", "scenarios", "beat"):
        assert services[name]["environment"]["ISTHMUS_GATEWAY_QUEUE"] == "gateways", name
    assert {_host_ip(p) for p in gateway["ports"]} == {"127.0.0.1"}
    # Gateways route to each cluster's plain listener in the network, which it advertises.
    ordinary = dict(
        pair.split("=") for pair in gateway["environment"]["ISTHMUS_ORDINARY_BOOTSTRAP"].split(",")
    )
    for cluster, address in ordinary.items():
        advertised = services[cluster]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
        assert f"NETWORK://{address}" in advertised.split(","), cluster


def _words(command: str | list[str]) -> str:
    """A service's command as one line (Compose v1 keeps a string a string, v2 splits it)."""
    return command if isinstance(command, str) else " ".join(command)


def _host_ip(port: str | dict) -> str:
    """A published port's address (`ip:host:container` from Compose v1, a mapping from v2)."""
    return port.split(":")[0] if isinstance(port, str) else port["host_ip"]
