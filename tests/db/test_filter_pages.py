"""The filter editors of the link page through Django's test client: saving through
links.alter_link_configs (audited, policy-checked), errors that mark the offending row, import,
export, and every refusal (bad JSON, unknown words, too many rows, a 5 MB body, a file, binary
bytes, a viewer saving, no CSRF token) answered with a message and nothing saved."""

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.urls import reverse

from console.forms.filters import FILTER_CHOICES, MAX_ROWS
from replication.core import filters
from replication.models import AuditEvent, ClusterLink

GROUPS = "consumer.offset.group.filters"
ANY_ACL = {
    "resourceFilter": {"resourceType": "any", "patternType": "any"},
    "accessFilter": {"operation": "any", "permissionType": "any"},
}


def url(link, name: str) -> str:
    return reverse(name, args=[link.destination.name, link.name])


def text(response) -> str:
    return " ".join(html.unescape(response.content.decode()).split())


def rows(list_: str = "groups", mode: str = "rows", **columns) -> dict:
    return {"list": list_, "mode": mode, **columns}


def saved(link) -> dict:
    link.refresh_from_db()
    return link.configs


def events(since: int, action: str = "link.alter_configs") -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(pk__gt=since, action=action).order_by("pk"))


def last_event() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def test_an_operator_saves_rows_as_confluent_json_and_an_empty_list_removes_the_key(
    make_link, client_as
):
    link = make_link()
    client = client_as("operator")
    page = client.get(reverse("link-detail", args=["destination", link.name])).content.decode()
    for slug in ("groups", "topics", "acls"):
        assert f'id="filters-{slug}"' in page
    assert "link-filters-save" not in page and "/filters/save/" in page  # the Save button

    since = last_event()
    response = client.post(
        url(link, "link-filters-save"),
        rows(
            name=["app-", "app-test", "*"],
            pattern_type=["PREFIXED", "LITERAL", "LITERAL"],
            filter_type=["INCLUDE", "EXCLUDE", "INCLUDE"],
        ),
    )
    assert response.status_code == 302 and response["Location"] == url(link, "link-detail")
    assert json.loads(saved(link)[GROUPS]) == {
        "groupFilters": [
            {"name": "app-", "patternType": "PREFIXED", "filterType": "INCLUDE"},
            {"name": "app-test", "patternType": "LITERAL", "filterType": "EXCLUDE"},
            {"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"},
        ]
    }
    [event] = events(since)
    assert event.result == "ok" and event.actor_name.startswith("operator")
    assert GROUPS in json.dumps(event.after)

    # Saved as it was: nothing to do, nothing audited.
    since = last_event()
    again = client.post(
        url(link, "link-filters-save"),
        rows(
            mode="json",
            json=json.dumps(
                {
                    "groupFilters": [
                        {"name": "app-", "patternType": "prefixed", "filterType": "include"},
                        {"name": "app-test", "filterType": "BLACKLIST"},
                        {"name": "*"},
                    ]
                }
            ),
        ),
    )
    assert "Nothing to save: the list is as saved." in text(again)
    assert events(since) == []

    # No rows: the key goes, through the same audited change.
    response = client.post(url(link, "link-filters-save"), rows(), follow=True)
    assert GROUPS not in saved(link)
    assert "Removed the consumer group filters" in text(response)
    assert [e.result for e in events(since)] == ["ok"]


def test_acl_rows_save_and_the_page_shows_them_again_as_rows(make_link, client_as):
    link = make_link()
    client = client_as("operator")
    client.post(
        url(link, "link-filters-save"),
        rows(
            "acls",
            resource_type=["topic", "any"],
            name=["orders", ""],
            pattern_type=["prefixed", "any"],
            principal=["User:alice", ""],
            host=["*", ""],
            operation=["read", "any"],
            permission_type=["allow", "deny"],
        ),
    )
    assert json.loads(saved(link)["acl.filters"]) == {
        "aclFilters": [
            {
                "resourceFilter": {
                    "resourceType": "topic",
                    "patternType": "prefixed",
                    "name": "orders",
                },
                "accessFilter": {
                    "operation": "read",
                    "permissionType": "allow",
                    "principal": "User:alice",
                    "host": "*",
                },
            },
            {
                "resourceFilter": {"resourceType": "any", "patternType": "any"},
                "accessFilter": {"operation": "any", "permissionType": "deny"},
            },
        ]
    }
    page = client.get(url(link, "link-detail")).content.decode()
    editor = page[page.index('id="filters-acls"') :]
    assert 'value="User:alice"' in editor and 'data-row="2"' in editor
    assert '<option value="deny" selected>' in editor


def test_every_word_a_row_offers_is_one_the_parser_takes():
    for slug, choices in FILTER_CHOICES.items():
        for field, words in choices.items():
            for word in words:
                if slug == "acls":
                    entry = {
                        "resourceFilter": {"resourceType": "any", "patternType": "any"},
                        "accessFilter": {"operation": "any", "permissionType": "any"},
                    }
                    side = (
                        "resourceFilter"
                        if field in ("resource_type", "pattern_type")
                        else ("accessFilter")
                    )
                    key = {"resource_type": "resourceType", "pattern_type": "patternType"}.get(
                        field,
                        {"operation": "operation", "permission_type": "permissionType"}.get(field),
                    )
                    entry[side][key] = word
                    filters.parse_acls(json.dumps({"aclFilters": [entry]}))
                else:
                    key = {"pattern_type": "patternType", "filter_type": "filterType"}[field]
                    top = filters.GROUPS if slug == "groups" else filters.TOPICS
                    filters.parse_names(json.dumps({top: [{"name": "x", key: word}]}), top)


def test_a_wrong_row_is_marked_with_its_message_and_nothing_is_saved(make_link, client_as):
    link = make_link({GROUPS: '{"groupFilters": [{"name": "keep"}]}'})
    before, since = saved(link)[GROUPS], last_event()
    client = client_as("operator")
    for target in ("link-filters-save", "link-filters-preview", "link-filters"):
        response = client.post(
            url(link, target),
            rows(
                name=["good", "", "bad-word"],
                pattern_type=["LITERAL", "LITERAL", "SUFFIXED"],
                filter_type=["INCLUDE", "INCLUDE", "INCLUDE"],
            ),
            headers={"HX-Request": "true"},
        )
        assert response.status_code == 200
        page = response.content.decode()
        shown = text(response)
        assert page.lstrip().startswith('<form id="filters-groups"')  # the editor alone, for HTMX
        assert "2 filters need fixing: see the marked rows." in shown
        assert '<tr data-row="1">' in page
        assert '<tr data-row="2" class="invalid" aria-invalid="true">' in page
        assert '<tr data-row="3" class="invalid" aria-invalid="true">' in page
        assert "Entry 2 of groupFilters: name is required: a name, a prefix, or * for all." in shown
        assert (
            "Entry 3 of groupFilters ('bad-word'): patternType 'SUFFIXED' is not one of "
            "LITERAL, PREFIXED." in shown
        )
        # the error sits right under its row, and the unknown word is still shown, selected
        assert page.index('data-error-of="3"') > page.index('data-row="3"')
        assert '<option value="SUFFIXED" selected>' in page
    assert saved(link)[GROUPS] == before
    assert events(since) == []


@pytest.mark.parametrize(
    ("list_", "posted", "message"),
    [
        ("groups", '{"groupFilters": [', "The list is not valid JSON at line 1 column 19."),
        (
            "groups",
            '{"topicFilters": []}',
            'The list must be a JSON object with one key, "groupFilters"',
        ),
        (
            "topics",
            '{"topicFilters": [{"name": "a"}, {"name": "b", "filterType": "MAYBE"}]}',
            "Entry 2 of topicFilters ('b'): filterType 'MAYBE' is not one of INCLUDE, EXCLUDE",
        ),
        (
            "acls",
            '{"aclFilters": [{"resourceFilter": {"resourceType": "table", "patternType": "any"},'
            ' "accessFilter": {"operation": "any", "permissionType": "any"}}]}',
            "Entry 1 of aclFilters, resourceFilter: resourceType 'table' is not one of",
        ),
        (
            "acls",
            '{"aclFilters": [{"resourceFilter": {"resourceType": "any", "patternType": "any"},'
            ' "accessFilter": {"principal": "alice", "operation": "any",'
            ' "permissionType": "any"}}]}',
            "principal 'alice' needs a type, e.g. User:alice.",
        ),
        ("groups", "x" * (filters.MAX_JSON + 1), "The list is longer than 256 KB"),
        (
            "groups",
            json.dumps(
                {"groupFilters": [{"name": f"g{i}"} for i in range(filters.MAX_ENTRIES + 1)]}
            ),
            f"The list has {filters.MAX_ENTRIES + 1} filters; at most {filters.MAX_ENTRIES}",
        ),
    ],
)
def test_pasted_json_that_is_wrong_is_refused_with_where_and_why(
    make_link, client_as, list_, posted, message
):
    link = make_link()
    before, since = saved(link), last_event()
    response = client_as("operator").post(
        url(link, "link-filters-save"), rows(list_, "json", json=posted)
    )
    assert response.status_code == 200
    assert message in text(response)
    assert 'class="error"' in response.content.decode()
    assert saved(link) == before and events(since) == []


def test_too_many_rows_are_refused_and_shown_as_json_to_edit(make_link, client_as):
    link = make_link()
    count = MAX_ROWS + 1
    response = client_as("operator").post(
        url(link, "link-filters-save"),
        rows(
            name=[f"g{i}" for i in range(count)],
            pattern_type=["LITERAL"] * count,
            filter_type=["INCLUDE"] * count,
        ),
    )
    shown = text(response)
    assert f"{count} rows are too many: the rows view holds at most {MAX_ROWS}." in shown
    assert 'data-mode="json"' in response.content.decode() and '"name": "g100"' in shown
    assert GROUPS not in saved(link)


def test_switching_views_keeps_the_list_and_json_that_cannot_be_rows_says_why(make_link, client_as):
    link = make_link()
    client = client_as("viewer")  # editing and previewing only read
    edit = url(link, "link-filters")
    as_json = client.post(
        edit,
        {**rows(name=["a-", "a-b"], pattern_type=["PREFIXED", "LITERAL"]), "op": "json"}
        | {"filter_type": ["INCLUDE", "EXCLUDE"]},
    )
    assert 'data-mode="json"' in as_json.content.decode()
    shown = text(as_json)
    document = shown[shown.index('{ "groupFilters"') : shown.index("</textarea>")]
    assert json.loads(document)["groupFilters"][1] == {
        "name": "a-b",
        "patternType": "LITERAL",
        "filterType": "EXCLUDE",
    }
    back = client.post(edit, {**rows(mode="json", json=document), "op": "rows"})
    page = back.content.decode()
    assert 'data-mode="rows"' in page and 'value="a-b"' in page and 'data-row="2"' in page

    broken = client.post(edit, {**rows(mode="json", json='{"groupFilters": [{}]}'), "op": "rows"})
    assert 'data-mode="json"' in broken.content.decode()
    assert "Entry 1 of groupFilters: name is required" in text(broken)

    added = client.post(
        edit, {**rows(name=["a"], pattern_type=["LITERAL"], filter_type=["INCLUDE"]), "op": "add"}
    )
    assert 'data-row="2"' in added.content.decode()
    removed = client.post(
        edit,
        rows(name=["a", "b"], pattern_type=["LITERAL"] * 2, filter_type=["INCLUDE"] * 2)
        | {"remove_row": "0"},
    )
    page = removed.content.decode()
    assert 'value="b"' in page and 'value="a"' not in page
    one = rows(name=["a"], pattern_type=["LITERAL"], filter_type=["INCLUDE"])
    nowhere = client.post(edit, one | {"remove_row": "7"})
    assert "There is no row '7' to remove." in text(nowhere)
    for odd in ("9" * 5000, "-1", "x", "\u00b2"):
        response = client.post(edit, one | {"remove_row": odd})
        assert response.status_code == 200 and "to remove." in text(response), odd
    unknown = client.post(edit, one | {"op": "explode"})
    assert "There is no editor action 'explode'." in text(unknown)
    checked = client.post(edit, one | {"op": "check"})
    assert "The list is valid: 1 filter. Not saved." in text(checked)
    assert GROUPS not in saved(link)


def test_an_imported_file_is_checked_like_pasted_json(make_link, client_as):
    link = make_link()
    client = client_as("operator")
    edit = url(link, "link-filters")
    good = json.dumps(
        {"topicFilters": [{"name": "orders", "patternType": "PREFIXED", "filterType": "INCLUDE"}]}
    )
    response = client.post(
        edit, rows("topics") | {"op": "import", "imported": good, "imported_name": "t.json"}
    )
    assert "Imported t.json: 1 filter, shown below. Not saved yet." in text(response)
    assert 'value="orders"' in response.content.decode()

    junk = "\x01\x02PK\x03\x04 not json"
    response = client.post(
        edit, rows("topics") | {"op": "import", "imported": junk, "imported_name": "x.zip"}
    )
    assert "Imported x.zip, but: The list is not valid JSON at line 1 column 1." in text(response)

    big = json.dumps({"topicFilters": [{"name": "t" * 1000}] * 300})
    response = client.post(
        edit, rows("topics") | {"op": "import", "imported": big, "imported_name": "big.json"}
    )
    assert "The list is longer than 256 KB" in text(response)
    assert "auto.create.mirror.topics.filters" not in saved(link)


def test_export_downloads_the_saved_list_in_confluents_format(make_link, client_as):
    stored = {
        "aclFilters": [
            {
                "resourceFilter": {"resourceType": "topic", "patternType": "literal", "name": "t"},
                "accessFilter": {"operation": "read", "permissionType": "allow"},
            }
        ]
    }
    link = make_link({"acl.filters": json.dumps(stored)})
    client = client_as("viewer")
    response = client.get(url(link, "link-filters-export") + "?list=acls")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="{link.name}-aclFilters.json"'
    assert json.loads(response.content) == stored
    empty = client.get(url(link, "link-filters-export") + "?list=groups")
    assert json.loads(empty.content) == {"groupFilters": []}
    unknown = client.get(url(link, "link-filters-export") + "?list=nope")
    assert unknown.status_code == 400 and "There is no filter list 'nope'" in text(unknown)
    assert client.post(url(link, "link-filters-export") + "?list=acls").status_code == 405


def test_a_viewer_edits_and_previews_but_saving_is_refused_and_audited(make_link, client_as):
    link = make_link()
    client = client_as("viewer")
    page = client.get(url(link, "link-detail")).content.decode()
    assert 'id="filters-groups"' in page and "/filters/save/" not in page
    form = rows(name=["*"], pattern_type=["LITERAL"], filter_type=["INCLUDE"])
    assert client.post(url(link, "link-filters-preview"), form).status_code == 200
    since = last_event()
    response = client.post(url(link, "link-filters-save"), form)
    assert response.status_code == 403
    assert "Your role does not allow link.manage" in text(response)
    [event] = list(AuditEvent.objects.filter(pk__gt=since))
    assert (event.action, event.result) == ("link.manage", "refused")
    assert GROUPS not in saved(link)


def test_a_refusal_of_the_domain_is_shown_on_the_editor_and_audited(make_link, client_as):
    acls = json.dumps({"aclFilters": [ANY_ACL]})
    link = make_link({"acl.sync.enable": "true", "acl.filters": acls})
    before, since = saved(link), last_event()
    response = client_as("operator").post(
        url(link, "link-filters-save"), rows("acls"), headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert "Not saved: acl.sync.enable=true needs acl.filters" in text(response)
    assert saved(link) == before
    assert [(e.result) for e in events(since)] == ["refused"]


def test_a_save_by_htmx_sends_the_browser_to_the_link_page(make_link, client_as):
    link = make_link()
    response = client_as("operator").post(
        url(link, "link-filters-save"),
        rows("topics", name=["orders"], pattern_type=["PREFIXED"], filter_type=["INCLUDE"]),
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and response["HX-Redirect"] == url(link, "link-detail")
    assert "orders" in saved(link)["auto.create.mirror.topics.filters"]


@pytest.mark.parametrize(
    ("what", "body", "content_type", "status", "message"),
    [
        (
            "a 5 MB form",
            b"list=groups&mode=json&json=" + b"a" * 5_000_000,
            "application/x-www-form-urlencoded",
            413,
            "The form is too large",
        ),
        (
            "a file upload",
            encode_multipart(
                BOUNDARY,
                {
                    "list": "groups",
                    "mode": "json",
                    "json": SimpleUploadedFile("groups.json", b'{"groupFilters": []}'),
                },
            ),
            MULTIPART_CONTENT,
            400,
            "The console's forms take no files",
        ),
        (
            "binary bytes",
            b"list=groups&mode=json&json=\xff\xfe\x00\x01",
            "application/x-www-form-urlencoded",
            400,
            "",
        ),
        (
            "a NUL in the JSON",
            b"list=groups&mode=json&json=%7B%22groupFilters%22%3A%5B%7B%22name%22%3A%22a%00%22%7D%5D%7D",
            "application/x-www-form-urlencoded",
            400,
            "NUL character",
        ),
        (
            "an unknown list",
            b"list=nope&mode=rows",
            "application/x-www-form-urlencoded",
            400,
            "There is no filter list 'nope': it is one of groups, topics, acls.",
        ),
        (
            "an unknown view",
            b"list=groups&mode=table",
            "application/x-www-form-urlencoded",
            400,
            "There is no filter view 'table'",
        ),
        (
            "rows cut short",
            b"list=groups&mode=rows&name=a&name=b&pattern_type=LITERAL&filter_type=INCLUDE",
            "application/x-www-form-urlencoded",
            400,
            "The rows came incomplete",
        ),
        (
            "JSON instead of a form",
            b'{"groupFilters": []}',
            "application/json",
            415,
            "The console's pages take forms",
        ),
    ],
)
def test_malformed_posts_are_refused_with_a_message_and_nothing_is_saved(
    make_link, client_as, what, body, content_type, status, message
):
    link = make_link({GROUPS: '{"groupFilters": [{"name": "keep"}]}'})
    before, since = saved(link), last_event()
    client = client_as("operator")
    for target in ("link-filters-save", "link-filters-preview", "link-filters"):
        response = client.generic("POST", url(link, target), body, content_type=content_type)
        assert response.status_code == status, (what, target, text(response)[:500])
        assert message in text(response), (what, target)
        assert "Traceback" not in text(response)
    assert saved(link) == before and events(since) == []


def test_a_post_without_its_csrf_token_is_refused(make_link, users):
    link = make_link()
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["operator"])
    response = client.post(
        url(link, "link-filters-save"),
        rows(name=["a"], pattern_type=["LITERAL"], filter_type=["INCLUDE"]),
    )
    assert response.status_code == 403 and "CSRF" in text(response)
    assert GROUPS not in saved(link)
    assert ClusterLink.objects.filter(pk=link.pk).exists()
