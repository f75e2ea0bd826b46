"""The link and mirror pages, driven with Django's test client against the real clusters."""

import re

import pytest
from django.urls import reverse

from devstack import kafka
from replication.models import ClusterLink, MirrorTopic
from tests.db.test_link_pages import detail_url, mirror_url
from tests.kafka_clients import produce

pytestmark = pytest.mark.integration


def test_a_link_from_a_registered_source_reads_as_its_link_principal_and_masks_it(
    registered_clusters, client_as, var_dir
):
    form = {
        "name": "web-link",
        "destination": registered_clusters["destination"].pk,
        "source": registered_clusters["source"].pk,
        "configs": "metadata.max.age.ms=5000",
    }
    response = client_as("operator").post(reverse("link-create"), form)
    link = ClusterLink.objects.get(name="web-link")
    assert response.status_code == 302 and response["Location"] == detail_url(link)
    assert link.source_cluster_id == registered_clusters["source"].cluster_id
    # The registered link principal (least privilege), not the console's super-user.
    assert link.configs["sasl.username"] == "replicator"
    assert link.all_configs()["sasl.password"] == kafka.credentials(var_dir)["replicator"]
    page = client_as("viewer").get(detail_url(link)).content.decode()
    assert '<code class="source-principal">User:replicator</code>' in page
    assert not [p for p in kafka.credentials(var_dir).values() if p in page]
    assert '<tr data-config="sasl.password">' in page and "(sensitive)" in page
    assert "metadata.max.age.ms" in page and "5000" in page


def test_creating_a_mirror_from_the_page(make_link, make_topic, topic_name, client_as):
    link = make_link()
    client = client_as("operator")
    url = reverse("mirror-create", args=["destination", link.name])

    missing = client.post(url, {"source_topic": topic_name, "configs": ""})
    assert "does not exist on the source cluster" in missing.content.decode()

    make_topic(kafka.SOURCE, topic_name, partitions=2)
    produce(
        {"bootstrap.servers": kafka.SOURCE.bootstrap},
        topic_name,
        [{"value": b"a", "partition": 0}] * 3,
    )
    # The form offers the source's topics to pick from, the internal ones left out.
    offered = client.get(url).content.decode()
    assert f'<option value="{topic_name}">' in offered and 'list="source-topics"' in offered
    assert "__consumer_offsets" not in offered
    response = client.post(url, {"source_topic": topic_name, "configs": "retention.ms=86400000"})
    refused = re.findall(r'role="alert">([^<]*)', response.content.decode())
    assert response.status_code == 302, refused  # what the form said, if it was refused
    assert response["Location"] == mirror_url(topic_name)
    assert MirrorTopic.objects.get(mirror_topic=topic_name).config_overrides == {
        "retention.ms": "86400000"
    }
    assert f'<option value="{topic_name}">' not in client.get(url).content.decode()
    page = client.get(mirror_url(topic_name)).content.decode()
    assert 'data-state="ACTIVE"' in page and 'hx-trigger="every 3s"' in page
    assert page.count("<tr data-partition=") == 2
    # Behind its source: Promote is not the primary action, and the page says why.
    assert "3 records behind its source at the worst partition: a promote is refused" in page
    assert 'class="button secondary" id="promote"' in page and 'id="safe-to-promote"' not in page

    partial = client.get(mirror_url(topic_name), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="partitions"') and "<html" not in partial
    # Partition 0 holds the 3 records not copied yet (no stream runs here), partition 1 none.
    assert '<tr data-partition="0">' in partial and '<span class="badge warn">3</span>' in partial
    assert '<span class="badge ok">0</span>' in partial
