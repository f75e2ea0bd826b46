"""The gateway proxy's configuration as Kroxylicious reads it, and its metrics as it writes them."""

from __future__ import annotations

import json
import socket
import stat

from infra import kroxylicious

ROUTE = kroxylicious.Route("orders", "127.0.0.1", 9400, "127.0.0.1:9093")


def test_the_configuration_routes_one_virtual_cluster_bound_to_the_gateways_host():
    config = json.loads(kroxylicious.render(ROUTE))
    (cluster,) = config["virtualClusters"]
    assert cluster["name"] == "orders"
    assert cluster["targetCluster"] == {"bootstrapServers": "127.0.0.1:9093"}
    provider = cluster["clusterNetworkAddressConfigProvider"]
    # Kroxylicious's own port-per-node gateway listens on every interface: ours binds the host.
    assert provider["type"] == "io.isthmus.gateway.LoopbackPortPerNode"
    assert provider["config"]["bootstrapAddress"] == "127.0.0.1:9400"
    assert config["management"] == {
        "bindAddress": "127.0.0.1",
        "port": 9411,
        "endpoints": {"prometheus": {}},
    }
    assert list(ROUTE.ports) == list(range(9400, 9412))


def test_the_configuration_file_is_its_owners_alone(tmp_path):
    path = tmp_path / "gw" / "kroxylicious.json"
    kroxylicious.write_config(path, ROUTE)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["virtualClusters"][0]["name"] == "orders"


def test_the_metrics_of_the_virtual_cluster_are_read_by_name():
    text = "\n".join(
        [
            "# TYPE kroxylicious_downstream_connections_total counter",
            'kroxylicious_downstream_connections_total{virtualCluster="orders"} 7.0',
            'kroxylicious_downstream_connections_total{virtualCluster="other"} 3.0',
            'kroxylicious_payload_size_bytes_count{ApiKey="FETCH",virtualCluster="orders"} 3',
            'kroxylicious_upstream_errors_total{virtualCluster="orders"} 0.0',
        ]
    )
    assert kroxylicious.parse_metrics(text, "orders") == {
        "kroxylicious_downstream_connections_total": 7.0,
        "kroxylicious_upstream_errors_total": 0.0,
    }


def test_a_free_block_skips_a_block_with_any_port_held():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        found = kroxylicious.free_block(port - 3)
    assert found >= port - 3 + kroxylicious.PORTS
    assert (found - (port - 3)) % kroxylicious.PORTS == 0
