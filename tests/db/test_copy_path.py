"""Which path a link's mirrors are copied on (issue 48): the batch path by default,
`mirror.copy.path` to choose, and the link's page saying which and why (in-memory clusters;
both paths copying real brokers: tests/integration/test_mirror_engine.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from replication.core.errors import ReplicationError
from replication.engine import publish
from replication.governance import audit
from replication.topics.links import alter_link_configs

ACTOR = audit.Actor.system("tests")


def _page(client_as, link) -> str:
    url = reverse("link-detail", args=[link.destination.name, link.name])
    return client_as("viewer").get(url).content.decode()


def test_a_link_is_copied_batch_for_batch_unless_its_config_asks_for_records(make_link, client_as):
    link = make_link()
    assert publish.link_spec(link)["path"] == "batch"
    assert publish.copy_path(link) == ("batch", "")
    assert 'data-path="batch"' in _page(client_as, link)

    alter_link_configs(ACTOR, link, {"mirror.copy.path": "record"}, [])
    link.refresh_from_db()
    assert link.configs["mirror.copy.path"] == "RECORD"
    assert publish.link_spec(link)["path"] == "record"
    page = _page(client_as, link)
    assert 'data-path="record"' in page and "as mirror.copy.path asks" in page


def test_a_link_syncing_schemas_stays_on_the_record_path_and_its_page_says_why(
    make_link, client_as, monkeypatch
):
    link = make_link()
    schemas = {"source": {"url": "http://s"}, "destination": {"url": "http://d"}}
    monkeypatch.setattr(publish.schema_links, "engine_spec", lambda _: schemas)
    path, why = publish.copy_path(link)
    assert path == "record" and "schema" in why
    page = _page(client_as, link)
    assert 'data-path="record"' in page and "not the batch path: schema linking" in page


def test_a_copy_path_kafka_does_not_know_is_refused_in_words(make_link):
    link = make_link()
    with pytest.raises(ReplicationError, match="mirror.copy.path must be one of BATCH, RECORD"):
        alter_link_configs(ACTOR, link, {"mirror.copy.path": "bytes"}, [])
    link.refresh_from_db()
    assert "mirror.copy.path" not in link.configs
