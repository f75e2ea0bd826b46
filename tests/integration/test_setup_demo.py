"""`make demo`'s setup: the clusters registered with their schema registries, the first admin,
and the tools' token."""

import pytest
from django.core.management import call_command

from devstack import registry
from isthmus_cli.common import read_properties
from replication.governance.tokens import authenticate
from replication.models import ApiToken, KafkaCluster

pytestmark = pytest.mark.integration


def test_setup_demo_registers_the_clusters_and_gives_the_tools_a_token(
    db, devstack, tmp_path, capsys
):
    path = tmp_path / "cli.properties"
    call_command("setup_demo", "--cli-config", str(path), "--console-url", "http://h:8000")

    assert set(KafkaCluster.objects.values_list("name", "schema_registry_url")) == {
        ("source", registry.SOURCE.url),
        ("destination", registry.DESTINATION.url),
    }
    props = read_properties(path)
    assert props["isthmus.url"] == "http://h:8000"
    assert authenticate(props["isthmus.token"]).user.username == "admin"
    assert path.stat().st_mode & 0o777 == 0o600

    # Run again: nothing new, the same token kept.
    call_command("setup_demo", "--cli-config", str(path))
    assert read_properties(path) == props
    assert ApiToken.objects.count() == 1
    # A cluster registered before the registries were in the stack gains its own.
    KafkaCluster.objects.filter(name="source").update(schema_registry_url="")
    call_command("setup_demo", "--cli-config", str(path))
    assert KafkaCluster.objects.get(name="source").schema_registry_url == registry.SOURCE.url
    # A token revoked meanwhile is replaced.
    ApiToken.objects.all().delete()
    call_command("setup_demo", "--cli-config", str(path))
    assert authenticate(read_properties(path)["isthmus.token"]).user.username == "admin"
