"""Stored credentials go only where they were registered for (issue 23, items 1 and 6).

A recording proxy stands at an address an operator might type: it forwards to the real source
cluster's SASL listener and keeps every byte a client sent it, so a SASL/PLAIN frame with a
stored password would be caught there."""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest
from django.urls import reverse

from devstack import kafka
from replication.core.errors import FieldProblems
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink
from replication.topics.link_creation import create_link

ACTOR = audit.Actor.system("tests")


class RecordingProxy:
    """A TCP proxy on a loopback port of its own to `target`, keeping what clients send."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.sent = bytearray()
        self.connections = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []  # closed with the proxy
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(self.target)
            self._open += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        try:
            while data := src.recv(65536):
                if record:
                    with self._lock:
                        self.sent += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()

    def close(self) -> None:
        """Its port and every connection through it closed, its threads ended: a client left
        connected through it after its test (a link's) would otherwise keep the pipe open in
        the test process for the rest of the session."""
        for s in [self.server, *self._open]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept() or recv()
            with contextlib.suppress(OSError):
                s.close()


@pytest.fixture
def proxy():
    recording = RecordingProxy(("127.0.0.1", kafka.SOURCE.sasl_port))
    yield recording
    recording.close()


def _passwords(var_dir) -> list[bytes]:
    return [p.encode() for p in kafka.credentials(var_dir).values()]


def test_a_registered_source_with_an_address_typed_beside_it_is_refused_and_sends_nothing(
    registered_clusters, client_as, proxy, var_dir
):
    form = {
        "name": "elsewhere",
        "destination": registered_clusters["destination"].pk,
        "source": registered_clusters["source"].pk,
        "configs": f"bootstrap.servers={proxy.address}",
    }
    response = client_as("operator").post(reverse("link-create"), form)
    page = response.content.decode()
    assert response.status_code == 200
    assert "registered credentials are used at the registered address only" in page
    assert "leave the source cluster empty" in page
    assert not ClusterLink.objects.exists()
    assert proxy.connections == 0 and not proxy.sent
    refused = AuditEvent.objects.get(action="link.create")
    assert refused.result == "refused"


@pytest.mark.parametrize(
    "typed",
    [
        {"security.protocol": "SASL_SSL"},
        {"sasl.mechanism": "SCRAM-SHA-256"},
        {"sasl.username": "admin"},
    ],
)
def test_a_registered_source_takes_no_other_connection_settings(registered_clusters, typed):
    with pytest.raises(FieldProblems) as refused:
        create_link(
            ACTOR,
            registered_clusters["destination"],
            "other-settings",
            typed,
            source=registered_clusters["source"],
        )
    assert next(iter(typed)) in refused.value.problems["configs"]
    assert not ClusterLink.objects.exists()


def test_the_api_never_uses_a_registered_clusters_credentials(
    registered_clusters, client_as, proxy, var_dir
):
    """The API's create takes a source cluster id, never its stored credentials: given only
    the id and an address, the link connects without any, and the proxy sees no password."""
    source, destination = registered_clusters["source"], registered_clusters["destination"]
    response = client_as("operator").post(
        f"/kafka/v3/clusters/{destination.cluster_id}/links?link_name=api-elsewhere",
        {
            "source_cluster_id": source.cluster_id,
            "configs": [
                {"name": "bootstrap.servers", "value": proxy.address},
                {"name": "security.protocol", "value": "SASL_PLAINTEXT"},
            ],
        },
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert not ClusterLink.objects.exists()
    assert not [p for p in _passwords(var_dir) if p in proxy.sent]
