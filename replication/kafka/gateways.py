"""Gateways (docs/gateways.md): a Kafka proxy, Kroxylicious, that clients connect to instead of
a cluster, so that moving them to another cluster is one switch here rather than a new
bootstrap address and a restart in every application.

An admin defines a gateway (its name, its client-facing address, the clusters it may route to
and the one it routes to now), changes or deletes it; `switch` routes its clients to another of
its clusters. Kroxylicious reads its configuration only at start, so a switch restarts the
proxy with a new one, waits until the new cluster answers through it, and puts the old route
back when it does not: a gateway is never left half-switched. The proxy runs on this host,
its files in var/ (config readable by its owner only), as the devstack's `gateway-NAME` part.
"""

from __future__ import annotations

import fcntl
import ipaddress
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from celery import current_app
from celery.exceptions import TimeoutError as CeleryTimeout
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from infra import kroxylicious, processes
from replication.core.errors import ReplicationError, conflict, not_found, unavailable
from replication.governance import audit
from replication.models import NAME_VALIDATOR, Gateway, KafkaCluster

LOG_LINES = 12  # of the proxy's log, in a refusal that it did not start
RUNNING_ASKED_S = 5.0  # the longest a page waits for the gateways' host to say what runs

log = logging.getLogger(__name__)


# Where a gateway's proxy keeps its files: the devstack's pid and log places, so `manage.py
# devstack status` and `logs gateway-NAME` see the same process.
def part_name(gateway: Gateway) -> str:
    return f"gateway-{gateway.name}"


def pidfile(gateway: Gateway) -> Path:
    return settings.VAR_DIR / "run" / f"{part_name(gateway)}.pid"


def logfile(gateway: Gateway) -> Path:
    return settings.VAR_DIR / "log" / f"{part_name(gateway)}.log"


def config_file(gateway: Gateway) -> Path:
    return settings.VAR_DIR / "gateways" / gateway.name / "kroxylicious.json"


def route_to(gateway: Gateway, cluster: KafkaCluster) -> kroxylicious.Route:
    """The proxy's route to `cluster`: its ordinary listener where ISTHMUS_ORDINARY_BOOTSTRAP
    names one (the address its applications use), else its registered bootstrap servers."""
    target = settings.ISTHMUS_ORDINARY_BOOTSTRAP.get(cluster.name) or cluster.bootstrap_servers
    return kroxylicious.Route(gateway.name, gateway.host, gateway.port, target)


def state(gateway: Gateway) -> dict:
    """What the audit trail keeps of a gateway, before and after a change."""
    return {
        "address": gateway.address,
        "clusters": sorted(c.name for c in gateway.clusters.all()),
        "route": gateway.route.name,
    }


# Defining, changing, deleting. -------------------------------------------------------------


def define(
    actor: audit.Actor,
    name: str,
    address: str,
    clusters: list[KafkaCluster],
    route: KafkaCluster,
) -> Gateway:
    """A new gateway, its proxy started and answering on `route`."""
    target = f"gateway {name}"
    with audit.refusals(actor, "gateway.define", target):
        _check_name(name)
        host, port = parse_address(address)
        _check_clusters(clusters, route)
        with transaction.atomic():
            gateway = Gateway.objects.create(name=name, host=host, port=port, route=route)
            gateway.clusters.set(clusters)
        try:
            _check_ports_free(gateway)
            start(gateway)
        except ReplicationError:
            gateway.delete()
            raise
    audit.record(actor, "gateway.define", target, after=state(gateway))
    return gateway


def change(
    actor: audit.Actor,
    gateway: Gateway,
    *,
    address: str | None = None,
    clusters: list[KafkaCluster] | None = None,
) -> Gateway:
    """Another address (the proxy restarts there) or other clusters it may route to (its
    route among them)."""
    target = f"gateway {gateway.name}"
    before = state(gateway)
    with audit.refusals(actor, "gateway.change", target), _held(gateway):
        if clusters is not None:
            _check_clusters(clusters, gateway.route)
        old = (gateway.host, gateway.port)
        new = parse_address(address, gateway) if address is not None else old
        if new != old:
            moved = Gateway(name=gateway.name, host=new[0], port=new[1])
            _check_ports_free(moved)
            stop(gateway)
            gateway.host, gateway.port = new
            try:
                start(gateway)
            except ReplicationError as exc:
                gateway.host, gateway.port = old
                raise _restored(gateway, exc) from exc
        with transaction.atomic():
            gateway.save()
            if clusters is not None:
                gateway.clusters.set(clusters)
    audit.record(actor, "gateway.change", target, before=before, after=state(gateway))
    return gateway


def delete(actor: audit.Actor, gateway: Gateway) -> None:
    """The gateway gone and its proxy stopped: its clients lose their connection."""
    target = f"gateway {gateway.name}"
    before = state(gateway)
    with audit.refusals(actor, "gateway.delete", target), _held(gateway):
        stop(gateway)
        shutil.rmtree(config_file(gateway).parent, ignore_errors=True)
        gateway.delete()
    audit.record(actor, "gateway.delete", target, before=before)


# Switching. -------------------------------------------------------------------------------


def switch(actor: audit.Actor, gateway: Gateway, cluster: KafkaCluster) -> Gateway:
    """Route the gateway's clients to `cluster`: the proxy restarted on it and answering with
    its cluster id, the switch counted and audited with how long the proxy did not listen.
    Refused in words, the route as it was, when `cluster` is not one it may route to or the
    proxy does not come up on it (its log's last lines say why)."""
    target = f"gateway {gateway.name}"
    with audit.refusals(actor, "gateway.switch", target), _held(gateway):
        gateway.refresh_from_db()
        before = state(gateway)
        if not gateway.clusters.filter(pk=cluster.pk).exists():
            allowed = ", ".join(sorted(c.name for c in gateway.clusters.all()))
            raise ReplicationError(
                f"Gateway {gateway.name} may not route to {cluster.name}: it may route to "
                f"{allowed}. An admin adds a cluster to it with a change first."
            )
        if gateway.route_id == cluster.pk:
            raise conflict(f"Gateway {gateway.name} already routes to {cluster.name}.")
        old = gateway.route
        stop(gateway)
        stopped = time.monotonic()
        gateway.route = cluster
        try:
            start(gateway)
        except ReplicationError as exc:
            gateway.route = old
            raise _restored(gateway, exc) from exc
        pause = time.monotonic() - stopped
        gateway.switches += 1
        gateway.switched_at = timezone.now()
        gateway.save(update_fields=["route", "switches", "switched_at", "updated_at"])
    audit.record(
        actor,
        "gateway.switch",
        target,
        before=before,
        after=state(gateway),
        message=f"The proxy did not listen for {pause:.1f} s (its restart on {cluster.name}).",
    )
    return gateway


def pause(actor: audit.Actor, gateway: Gateway, why: str) -> None:
    """Stop the proxy, its clients left retrying (holding what they produce) until `resume` or
    `switch` starts it again: a cutover pauses them while its topics change hands."""
    with _held(gateway):
        stop(gateway)
    audit.record(actor, "gateway.pause", f"gateway {gateway.name}", message=why)


def resume(actor: audit.Actor, gateway: Gateway, why: str) -> None:
    """Start the paused proxy again on the route it had (nothing changed hands)."""
    target = f"gateway {gateway.name}"
    with audit.refusals(actor, "gateway.resume", target), _held(gateway):
        gateway.refresh_from_db()
        if not running(gateway):
            start(gateway)
    audit.record(actor, "gateway.resume", target, message=why)


def _restored(gateway: Gateway, failure: ReplicationError) -> ReplicationError:
    """The refusal of a proxy that did not start, once the one before it runs again."""
    try:
        start(gateway)
    except ReplicationError as again:
        return unavailable(f"{failure} It did not start again as it was either: {again}")
    return unavailable(f"{failure} Its clients are back on {gateway.route.name}, as before.")


# The proxy's process. ----------------------------------------------------------------------


def get_gateway(name: str) -> Gateway:
    """The gateway `name`, or a 404 refusal that says where they are listed."""
    found = Gateway.objects.select_related("route").filter(name=name).first()
    if found is None:
        raise not_found(f"No gateway named {name!r}; the Gateways page lists them.")
    return found


def running(gateway: Gateway) -> bool:
    """Whether its proxy runs; False too while the gateways' host does not answer."""
    try:
        return bool(_on_proxy_host("running", gateway, RUNNING_ASKED_S))
    except ReplicationError as exc:
        log.warning("Gateway %s: %s", gateway.name, exc)
        return False


def start(gateway: Gateway) -> None:
    """Start the proxy on the gateway's route (as it is in memory) and wait until that
    cluster answers through it, or raise saying why, the proxy stopped."""
    _on_proxy_host("start", gateway, settings.GATEWAY_START_S + settings.GATEWAY_ANSWER_S + 30)


def stop(gateway: Gateway) -> None:
    _on_proxy_host("stop", gateway, 30)


def _ports_held(gateway: Gateway) -> list[tuple[int, str]]:
    """The ports of the gateway's block something holds on its host, with what holds each."""
    held = _on_proxy_host("ports_held", gateway, RUNNING_ASKED_S)
    return [(int(port), str(holder)) for port, holder in held]


def start_stopped_here() -> list[str]:
    """Start every defined gateway's proxy that does not run on this host, the gateways' host
    starting again (`manage.py start_gateways`); what happened to each, in words."""
    said = []
    for gateway in Gateway.objects.select_related("route").order_by("name"):
        if _running_here(gateway):
            said.append(f"Gateway {gateway.name} runs at {gateway.address}.")
            continue
        try:
            with _held(gateway):
                _start_here(gateway)
        except ReplicationError as exc:
            said.append(f"Gateway {gateway.name} did not start: {exc}")
        else:
            said.append(
                f"Gateway {gateway.name} started at {gateway.address}, routing to "
                f"{gateway.route.name}."
            )
    return said


def _running_here(gateway: Gateway) -> bool:
    return processes.read_pidfile(pidfile(gateway)) is not None


def _start_here(gateway: Gateway) -> None:
    route = route_to(gateway, gateway.route)
    kroxylicious.write_config(config_file(gateway), route)
    try:
        command = kroxylicious.command(config_file(gateway))
    except FileNotFoundError as exc:
        raise unavailable(str(exc)) from exc
    processes.start(
        command,
        pidfile=pidfile(gateway),
        logfile=logfile(gateway),
        env=dict(os.environ),
        cwd=kroxylicious.ROOT,
    )
    why = _not_answering(gateway, route)
    if why:
        _stop_here(gateway)
        raise unavailable(
            f"Gateway {gateway.name}'s proxy did not start on {gateway.route.name} "
            f"({route.target}): {why}. The last lines of {logfile(gateway)}:\n{log_tail(gateway)}"
        )


def _not_answering(gateway: Gateway, route: kroxylicious.Route) -> str:
    """Why the proxy does not answer with the route's cluster id (any id, for a cluster
    registered without one), or "" once it does. The JVM's start may take
    ISTHMUS_GATEWAY_START_S (a busy machine); the cluster, once it listens,
    ISTHMUS_GATEWAY_ANSWER_S."""
    started = processes.wait_for(
        lambda: not running(gateway) or processes.port_holder(route.port, route.host),
        settings.GATEWAY_START_S,
        0.1,
    )
    if not running(gateway):
        return "it exited"
    if not started:
        return f"it did not listen within {settings.GATEWAY_START_S:g} s"
    expected = gateway.route.cluster_id
    deadline = time.monotonic() + settings.GATEWAY_ANSWER_S
    while time.monotonic() < deadline and running(gateway):
        try:
            found = kroxylicious.cluster_id(route)
        except Exception:  # noqa: BLE001 - the cluster not reached through it (yet)
            time.sleep(0.2)
            continue
        if not expected or found == expected:
            return ""
        time.sleep(0.2)
    if not running(gateway):
        return "it exited"
    return f"the cluster did not answer through it within {settings.GATEWAY_ANSWER_S:g} s"


def _stop_here(gateway: Gateway) -> None:
    processes.stop(pidfile(gateway), timeout=15)


def _ports_held_here(gateway: Gateway) -> list[tuple[int, str]]:
    ports = kroxylicious.block(gateway.port)
    held = [(port, processes.port_holder(port, gateway.host)) for port in ports]
    return [(port, holder) for port, holder in held if holder]


# The proxies' host. Where ISTHMUS_GATEWAY_QUEUE names a queue (the compose file's `gateway`
# service), the proxies run on the host whose worker takes that queue, whichever console or
# worker asks: each operation on a proxy is a task there, waited for. Unset, they run here.
_HERE = {
    "running": _running_here,
    "start": _start_here,
    "stop": _stop_here,
    "ports_held": _ports_held_here,
}


def _on_proxy_host(operation: str, gateway: Gateway, timeout: float) -> Any:
    queue = settings.GATEWAY_QUEUE
    if not queue:
        return _HERE[operation](gateway)
    spec = {"name": gateway.name, "host": gateway.host, "port": gateway.port}
    asked = current_app.send_task(
        "replication.tasks.gateway_proxy", [operation, spec, gateway.route_id], queue=queue
    )
    try:
        # A cutover's request asks from a task of its own, on another queue.
        answer = asked.get(timeout=timeout, disable_sync_subtasks=False)
    except CeleryTimeout:
        asked.revoke()
        raise unavailable(
            f"The gateways' host (the worker taking queue {queue}) did not answer within "
            f"{timeout:g} s: start it (the compose file's gateway service), then try again."
        ) from None
    finally:
        asked.forget()
    if "refused" in answer:
        raise ReplicationError(answer["refused"], answer["status"])
    return answer["value"]


def on_this_host(operation: str, spec: dict, route_id: int | None) -> dict:
    """One operation on a proxy of this host, asked by `_on_proxy_host` elsewhere (the
    `gateway_proxy` task): its value, or its refusal's words and status."""
    gateway = Gateway(**spec)
    if route_id is not None:
        gateway.route = KafkaCluster.objects.get(pk=route_id)
    try:
        return {"value": _HERE[operation](gateway)}
    except ReplicationError as exc:
        return {"refused": str(exc), "status": exc.status}


def connections(gateway: Gateway) -> float | None:
    """Client connections its proxy accepted since it started, or None while it does not
    answer (its metrics endpoint, asked with a short timeout: /metrics asks every gateway)."""
    found = kroxylicious.metrics(route_to(gateway, gateway.route), timeout=0.5)
    return found.get("kroxylicious_downstream_connections_total")


def log_tail(gateway: Gateway, lines: int = LOG_LINES) -> str:
    path = logfile(gateway)
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def _held(gateway: Gateway) -> Iterator[None]:
    """One change of a gateway's proxy at a time on this host: a second switch waits for the
    first, then finds the route it left."""
    path = config_file(gateway).with_name("lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# Checks. ------------------------------------------------------------------------------------


def _check_name(name: str) -> None:
    try:
        NAME_VALIDATOR(name)
    except ValidationError as exc:
        raise ReplicationError(f"Gateway name {name!r}: {' '.join(exc.messages)}") from exc
    if Gateway.objects.filter(name=name).exists():
        raise conflict(f"A gateway named {name} exists already: choose another name.")


def parse_address(address: str, of: Gateway | None = None) -> tuple[str, int]:
    """HOST:PORT, on loopback unless ISTHMUS_GATEWAY_ANY_ADDRESS allows any, its ports
    clear of every other gateway's (`of`: the gateway it is for, when it moves)."""
    host, _, port_text = address.strip().rpartition(":")
    host = host.strip("[]")
    last = kroxylicious.HIGHEST_FIRST
    if not host or not port_text.isdigit() or not 1024 <= int(port_text) <= last:
        raise ReplicationError(
            f"The gateway's address {address!r} is not HOST:PORT with a port from 1024 to "
            f"{last} (it also takes the {kroxylicious.PORTS - 1} ports after it), e.g. "
            "127.0.0.1:9400."
        )
    if not settings.GATEWAY_ANY_ADDRESS and not _loopback(host):
        raise ReplicationError(
            f"The gateway's address {host} is not on loopback: its proxy would take clients "
            "from other machines. Give 127.0.0.1, or set ISTHMUS_GATEWAY_ANY_ADDRESS=1 where "
            "that is meant."
        )
    taken = _overlapping(host, int(port_text))
    if of is not None:
        taken = taken.exclude(pk=of.pk)
    if taken.exists():
        raise conflict(
            f"{address} overlaps the ports of gateway {taken.first()}: each takes "
            f"{kroxylicious.PORTS} ports from its own. Choose another port."
        )
    return host, int(port_text)


def free_address(host: str = "127.0.0.1", first: int = 31400) -> str:
    """An address on `host` whose whole block of ports no gateway has and nothing holds now
    (a scenario's gateway: its own, beside the user's)."""
    for port in range(first, kroxylicious.HIGHEST_FIRST + 1, kroxylicious.PORTS):
        if _overlapping(host, port).exists():
            continue
        if not _ports_held(Gateway(name="", host=host, port=port)):
            return f"{host}:{port}"
    raise unavailable(f"No block of {kroxylicious.PORTS} free ports on {host} for a gateway.")


def _overlapping(host: str, port: int):
    """The gateways on `host` whose block of ports overlaps the one starting at `port`."""
    return Gateway.objects.filter(
        host=host, port__gt=port - kroxylicious.PORTS, port__lt=port + kroxylicious.PORTS
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_ports_free(gateway: Gateway) -> None:
    held = _ports_held(gateway)
    if held:
        port, holder = held[0]
        ports = kroxylicious.block(gateway.port)
        raise conflict(
            f"Port {port} of {gateway.host} is in use by {holder}: a gateway at "
            f"{gateway.address} needs ports {ports.start}-{ports.stop - 1}. "
            "Choose another port, or stop what holds it."
        )


def _check_clusters(clusters: list[KafkaCluster], route: KafkaCluster) -> None:
    if not clusters:
        raise ReplicationError("Name at least one cluster the gateway may route to.")
    if route not in clusters:
        raise ReplicationError(
            f"The gateway routes to {route.name}, which is not among the clusters it may "
            "route to: add it to them."
        )
    for cluster in clusters:
        protocol = str(cluster.client_config.get("security.protocol", "PLAINTEXT")).upper()
        if protocol.endswith("SSL") and cluster.name not in settings.ISTHMUS_ORDINARY_BOOTSTRAP:
            raise ReplicationError(
                f"{cluster.name} is reached over TLS ({protocol}), which gateways do not "
                "configure toward a cluster yet; give its plain listener in "
                "ISTHMUS_ORDINARY_BOOTSTRAP."
            )
