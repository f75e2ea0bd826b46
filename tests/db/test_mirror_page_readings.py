"""What the mirror page shows beside its live table, on in-memory clusters: the partition table
puts state and lag first (a phone shows the first columns), a stored report lists partitions in
order, and the partitions' refresh brings the verification's sentence with it, so the page
never says "not compared yet" beside offsets verified since it loaded."""

from __future__ import annotations

import re

import pytest

from devstack import kafka
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.mirrors import create_mirror

pytestmark = pytest.mark.db


@pytest.fixture
def mirror(memory_clusters, make_link, make_topic, topic_name) -> MirrorTopic:
    link = make_link({"cluster.link.paused": "true"})
    return create_mirror(audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, topic_name, 3))


def _url(mirror: MirrorTopic) -> str:
    return f"/mirrors/{mirror.destination.name}/{mirror.mirror_topic}/"


def test_the_partition_table_shows_state_and_lag_first(mirror, client_as):
    page = client_as("viewer").get(_url(mirror)).content.decode()
    table = page[page.index('<div id="partitions"') :]
    heads = re.findall(r"<th>([^<]+)</th>", table[: table.index("</thead>")])
    assert heads[:3] == ["Partition", "State", "Lag"]
    rows = re.findall(r'<tr data-partition="(\d+)">', table)
    assert rows == ["0", "1", "2"]


def test_a_stored_report_lists_its_partitions_in_order(mirror, client_as):
    stopped = {str(p): p * 10 for p in (10, 2, 0, 1)}  # as a JSON column may hand them back
    MirrorTopic.objects.filter(pk=mirror.pk).update(stop_offsets=stopped)
    page = client_as("viewer").get(_url(mirror)).content.decode()
    shown = page[page.index('<dd id="stop-offsets">') :].split("</dd>")[0]
    assert re.findall(r"<code>(\d+):", shown) == ["0", "1", "2", "10"]


def test_the_refresh_brings_the_verifications_sentence_with_the_table(mirror, client_as):
    client = client_as("viewer")
    assert "Not compared with its source yet" in client.get(_url(mirror)).content.decode()
    verification = {"at": 1_700_000_000, "partitions": {"0": {"from": 0, "source": 0}}}
    MirrorTopic.objects.filter(pk=mirror.pk).update(verification=verification)
    refresh = client.get(_url(mirror), headers={"HX-Request": "true"}).content.decode()
    assert '<p id="verified" class="hint" hx-swap-oob="true">Identical to its source' in refresh
    assert "Not compared with its source yet" not in refresh
