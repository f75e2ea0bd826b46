"""`make demo`'s setup: the clusters registered with their schema registries, the first admin,
the tools' token, and a gateway routing to the source, its proxy answering."""

import pytest
from django.core.management import call_command

from devstack import registry
from infra import kroxylicious
from isthmus_cli.common import read_properties
from replication.governance import audit
from replication.governance.tokens import authenticate
from replication.kafka import gateways
from replication.models import ApiToken, Gateway, KafkaCluster

pytestmark = pytest.mark.integration


def test_setup_demo_registers_the_clusters_and_gives_the_tools_a_token(
    db, devstack, tmp_path, capsys
):
    path = tmp_path / "cli.properties"
    address = gateways.free_address(first=32400)
    try:
        call_command(
            "setup_demo",
            "--cli-config",
            str(path),
            "--console-url",
            "http://h:8000",
            "--gateway-address",
            address,
        )
        assert set(KafkaCluster.objects.values_list("name", "schema_registry_url")) == {
            ("source", registry.SOURCE.url),
            ("destination", registry.DESTINATION.url),
        }
        gateway = Gateway.objects.get()
        assert (gateway.name, gateway.address, gateway.route.name) == ("apps", address, "source")
        assert {c.name for c in gateway.clusters.all()} == {"source", "destination"}
        route = gateways.route_to(gateway, gateway.route)
        assert kroxylicious.cluster_id(route) == gateway.route.cluster_id
        # The gateways' host started again starts the proxies that do not run.
        gateways.stop(gateway)
        call_command("start_gateways")
        assert kroxylicious.cluster_id(route) == gateway.route.cluster_id
        _runs_again_changing_nothing(path)
    finally:
        for each in Gateway.objects.all():
            gateways.delete(audit.Actor.system("tests"), each)
            gateways.logfile(each).unlink(missing_ok=True)
    said = capsys.readouterr().out
    assert "defined gateway apps" in said and f"Gateway apps started at {address}" in said


def _runs_again_changing_nothing(path) -> None:
    props = read_properties(path)
    assert props["isthmus.url"] == "http://h:8000"
    assert authenticate(props["isthmus.token"]).user.username == "admin"
    assert path.stat().st_mode & 0o777 == 0o600

    # Run again: nothing new, the same token kept.
    call_command("setup_demo", "--cli-config", str(path))
    assert read_properties(path) == props
    assert (ApiToken.objects.count(), Gateway.objects.count()) == (1, 1)
    # A cluster registered before the registries were in the stack gains its own.
    KafkaCluster.objects.filter(name="source").update(schema_registry_url="")
    call_command("setup_demo", "--cli-config", str(path))
    assert KafkaCluster.objects.get(name="source").schema_registry_url == registry.SOURCE.url
    # A token revoked meanwhile is replaced.
    ApiToken.objects.all().delete()
    call_command("setup_demo", "--cli-config", str(path))
    assert authenticate(read_properties(path)["isthmus.token"]).user.username == "admin"
