"""The filter preview (replication.sync.filter_preview) on in-memory clusters: bounded answers,
and a source that does not answer or runs no authorizer said in words, on the page too, never a
500. What include, exclude, prefixes and Kafka's own ACL filters select on a real source is
tests/integration/test_filter_preview.py."""

import html
import json

import pytest
from django.urls import reverse

from devstack import kafka
from infra.kafka_errors import AuthorizerDisabled
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink
from replication.sync import filter_preview
from replication.topics.mirrors import create_mirror
from tests import leftovers


def names(*entries: tuple[str, str, str]) -> list[filters.NameFilter]:
    """(name, patternType, filterType) entries, through the parser as a link config is."""
    document = {
        filters.GROUPS: [{"name": n, "patternType": p, "filterType": f} for n, p, f in entries]
    }
    return filters.parse_names(json.dumps(document), filters.GROUPS)


def acl_filters(*entries: dict) -> list[filters.AclFilter]:
    return filters.parse_acls(json.dumps({filters.ACLS: list(entries)}))


def acl_filter(resource: dict, access: dict | None = None) -> dict:
    return {
        "resourceFilter": {"patternType": "any", **resource},
        "accessFilter": {"operation": "any", "permissionType": "any", **(access or {})},
    }


@pytest.fixture
def prefix() -> str:
    return leftovers.unique_name("filters")


@pytest.fixture
def link(make_link):
    # Paused: no stream starts; the preview asks the source through the link's connection.
    return make_link({"cluster.link.paused": "true"})


@pytest.fixture
def source_topics(make_topic, prefix):
    made = {
        label: make_topic(kafka.SOURCE, name)
        for label, name in {
            "orders": f"{prefix}-orders",
            "orders-tmp": f"{prefix}-orders-tmp",
            "payments": f"{prefix}-payments",
            "other": f"{prefix}-other",
            "internal": f"__{prefix}-internal",
            "isthmus": f"_isthmus-{prefix}",
        }.items()
    }
    return made


# Consumer groups. ------------------------------------------------------------------------------


def test_topics_this_link_mirrors_already_are_told_apart(link, source_topics, prefix):
    create_mirror(audit.Actor.system("tests"), link, source_topics["orders"])
    preview = filter_preview.preview_topics(
        link, names((f"{prefix}-orders", "PREFIXED", "INCLUDE"))
    )
    assert preview.selected.shown == sorted([source_topics["orders"], source_topics["orders-tmp"]])
    assert preview.mirrored.shown == [source_topics["orders"]]


def test_the_answer_is_bounded_with_a_count(link, source_topics, prefix, monkeypatch):
    monkeypatch.setattr(filter_preview, "LIMIT", 2)
    preview = filter_preview.preview_topics(link, names((prefix, "PREFIXED", "INCLUDE")))
    assert preview.selected.count == 4
    assert (
        preview.selected.shown
        == sorted([source_topics[k] for k in ("orders", "orders-tmp", "payments", "other")])[:2]
    )
    assert preview.selected.more == 2


# ACLs. -----------------------------------------------------------------------------------------


def test_a_source_without_an_authorizer_is_said_so(link, monkeypatch):
    class NoAuthorizer:
        def describe_acls(self, acl_filter):
            raise AuthorizerDisabled("Could not read the ACLs: the cluster has no authorizer.")

    monkeypatch.setattr(filter_preview, "source_admin", lambda link: NoAuthorizer())
    with pytest.raises(ReplicationError, match="runs no authorizer, so it has no ACLs"):
        filter_preview.preview_acls(link, acl_filters(acl_filter({"resourceType": "any"})))


# Through the page. -----------------------------------------------------------------------------


def preview_page(client, link, form: dict) -> tuple[int, str]:
    response = client.post(
        reverse("link-filters-preview", args=[link.destination.name, link.name]),
        form,
        headers={"HX-Request": "true"},
    )
    return response.status_code, " ".join(html.unescape(response.content.decode()).split())


def test_a_viewer_previews_the_list_as_edited_and_nothing_is_saved(
    link, source_topics, prefix, client_as
):
    since = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    status, page = preview_page(
        client_as("viewer"),
        link,
        {
            "list": "topics",
            "mode": "rows",
            "name": [prefix, f"__{prefix}", source_topics["orders-tmp"]],
            "pattern_type": ["PREFIXED", "PREFIXED", "LITERAL"],
            "filter_type": ["INCLUDE", "INCLUDE", "EXCLUDE"],
        },
    )
    assert status == 200
    assert "3 of " in page and "source topics selected: they would get mirror topics" in page
    assert "1 internal topic selected but skipped" in page
    selected = page[page.index('data-names="selected"') : page.index("</ul>")]
    assert source_topics["orders"] in selected and source_topics["orders-tmp"] not in selected
    assert source_topics["internal"] in page[page.index('data-names="internal"') :]
    link.refresh_from_db()
    assert "auto.create.mirror.topics.filters" not in link.configs
    assert not AuditEvent.objects.filter(pk__gt=since).exists()


def test_a_source_that_does_not_answer_is_said_so_on_the_page(link, client_as, settings):
    settings.KAFKA_ADMIN_TIMEOUT = 1
    ClusterLink.objects.filter(pk=link.pk).update(
        configs={**link.configs, "bootstrap.servers": "127.0.0.1:1"}
    )
    link.refresh_from_db()
    with pytest.raises(ReplicationError, match="did not answer, so there is nothing to preview"):
        filter_preview.preview_groups(link, names(("*", "LITERAL", "INCLUDE")))
    for list_, form in [
        ("groups", {"name": "*", "pattern_type": "LITERAL", "filter_type": "INCLUDE"}),
        ("topics", {"name": "*", "pattern_type": "LITERAL", "filter_type": "INCLUDE"}),
        (
            "acls",
            {
                "resource_type": "any",
                "name": "",
                "pattern_type": "any",
                "principal": "",
                "host": "",
                "operation": "any",
                "permission_type": "any",
            },
        ),
    ]:
        status, page = preview_page(
            client_as("viewer"), link, {"list": list_, "mode": "rows", **form}
        )
        assert status == 200, page[:500]
        assert f"The source cluster of link {link.name} did not answer" in page
        assert "127.0.0.1:1" in page


def test_the_page_says_when_the_source_runs_no_authorizer(link, client_as, monkeypatch):
    class NoAuthorizer:
        def describe_acls(self, acl_filter):
            raise AuthorizerDisabled("Could not read the ACLs: the cluster has no authorizer.")

    monkeypatch.setattr(filter_preview, "source_admin", lambda link: NoAuthorizer())
    status, page = preview_page(
        client_as("operator"),
        link,
        {
            "list": "acls",
            "mode": "json",
            "json": json.dumps({"aclFilters": [acl_filter({"resourceType": "any"})]}),
        },
    )
    assert status == 200
    assert "runs no authorizer, so it has no ACLs to select or sync" in page
