"""The filter editors of the link page in a real browser: rows added and removed, an error that
marks its row, the JSON view, a preview of the source, saving, export as a .json download,
import of a file (and of files that are no filter list), and a viewer who may preview only."""

import json
import re

import pytest
from playwright.sync_api import expect

from devstack import kafka
from replication.models import ClusterLink

pytestmark = pytest.mark.e2e

TOPICS = "auto.create.mirror.topics.filters"
GROUPS = "consumer.offset.group.filters"


def configs(link) -> dict:
    return ClusterLink.objects.get(pk=link.pk).configs


def fill_row(editor, n: int, name: str, pattern: str, kind: str) -> None:
    editor.get_by_label(f"Name of filter {n}").fill(name)
    editor.get_by_label(f"Pattern type of filter {n}").select_option(pattern)
    editor.get_by_label(f"Filter type of filter {n}").select_option(kind)


def add_row(editor, n: int) -> None:
    """Add a row and wait for it: the editor comes back from the server with it."""
    editor.get_by_role("button", name="Add filter").click()
    expect(editor.get_by_label(f"Name of filter {n}")).to_be_visible()


def test_an_operator_edits_previews_saves_exports_and_imports_filters(
    login, live_server, make_link, make_topic, topic_name
):
    orders, tmp = (
        make_topic(kafka.SOURCE, f"{topic_name}-o"),
        make_topic(kafka.SOURCE, f"{topic_name}-o-tmp"),
    )
    internal = make_topic(kafka.SOURCE, f"__{topic_name}")
    link = make_link({"cluster.link.paused": "true"})
    page = login("operator")
    page.goto(f"{live_server.url}/links/destination/{link.name}/")
    topics = page.locator("#filters-topics")
    expect(topics).to_contain_text("No filters: no topic is mirrored automatically.")

    # Two rows, the second left without a name: saving marks it and saves nothing.
    add_row(topics, 1)
    fill_row(topics, 1, f"{topic_name}-o", "PREFIXED", "INCLUDE")
    add_row(topics, 2)
    expect(topics.get_by_label("Name of filter 1")).to_have_value(f"{topic_name}-o")
    topics.get_by_role("button", name="Save").click()
    expect(topics.locator('tr[data-row="2"]')).to_have_attribute("aria-invalid", "true")
    expect(topics.locator('tr[data-row="1"]')).not_to_have_attribute("aria-invalid", "true")
    expect(topics.locator('tr[data-error-of="2"]')).to_contain_text(
        "Entry 2 of topicFilters: name is required"
    )
    expect(topics.locator("[data-editor-error]")).to_contain_text(
        "A filter needs fixing: see the marked row."
    )
    assert TOPICS not in configs(link)

    # Fixed, with a third row that selects an internal topic; the preview asks the source.
    fill_row(topics, 2, tmp, "LITERAL", "EXCLUDE")
    add_row(topics, 3)
    fill_row(topics, 3, f"__{topic_name}", "PREFIXED", "INCLUDE")
    topics.get_by_role("button", name="Preview").click()
    selected = topics.locator('[data-names="selected"]')
    expect(selected).to_have_text(orders)
    expect(topics.locator('[data-names="internal"]')).to_have_text(internal)
    expect(topics).to_contain_text("1 internal topic selected but skipped")
    assert TOPICS not in configs(link)

    # The JSON view holds the same list; back to rows, one row removed.
    topics.get_by_role("button", name="JSON", exact=True).click()
    textarea = topics.locator("textarea[name=json]")
    expect(textarea).to_be_visible()
    shown = json.loads(textarea.input_value())
    assert [f["name"] for f in shown["topicFilters"]] == [f"{topic_name}-o", tmp, f"__{topic_name}"]
    topics.get_by_role("button", name="Rows", exact=True).click()
    expect(topics.get_by_label("Name of filter 3")).to_have_value(f"__{topic_name}")
    topics.get_by_role("button", name="Remove filter 3").click()
    expect(topics.locator('tr[data-row="3"]')).to_have_count(0)

    # Saved: back on the link page with the config set, in Confluent's format.
    topics.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text(
        f"Saved the auto-create topic filters of link {link.name}."
    )
    expect(page.locator(f'tr[data-config="{TOPICS}"]')).to_contain_text(f"{topic_name}-o")
    assert json.loads(configs(link)[TOPICS]) == {
        "topicFilters": [
            {"name": f"{topic_name}-o", "patternType": "PREFIXED", "filterType": "INCLUDE"},
            {"name": tmp, "patternType": "LITERAL", "filterType": "EXCLUDE"},
        ]
    }
    expect(topics.get_by_label("Name of filter 2")).to_have_value(tmp)

    # Export: a .json download of what is saved.
    with page.expect_download() as download:
        topics.get_by_role("link", name="Export saved JSON").click()
    assert download.value.suggested_filename == f"{link.name}-topicFilters.json"
    with open(download.value.path()) as exported:
        assert json.load(exported) == json.loads(configs(link)[TOPICS])

    # Import into the group filters: shown as rows, saved only when saved.
    groups = page.locator("#filters-groups")
    upload = {
        "groupFilters": [
            {"name": "app-", "patternType": "PREFIXED", "filterType": "INCLUDE"},
            {"name": "app-test", "patternType": "LITERAL", "filterType": "EXCLUDE"},
        ]
    }
    groups.locator("input[data-import]").set_input_files(
        {
            "name": "groups.json",
            "mimeType": "application/json",
            "buffer": json.dumps(upload).encode(),
        }
    )
    expect(groups.locator(".note")).to_contain_text("Imported groups.json: 2 filters")
    expect(groups.get_by_label("Name of filter 2")).to_have_value("app-test")
    assert GROUPS not in configs(link)

    # Files that are no filter list: said on the editor, nothing changes.
    bad = {"groupFilters": [{"name": "a"}, {"name": "x", "patternType": "SUFFIXED"}]}
    groups.locator("input[data-import]").set_input_files(
        {"name": "bad.json", "mimeType": "application/json", "buffer": json.dumps(bad).encode()}
    )
    expect(groups.locator("[data-editor-error]")).to_contain_text(
        "Imported bad.json, but: Entry 2 of groupFilters ('x'): patternType 'SUFFIXED' is not "
        "one of LITERAL, PREFIXED."
    )
    expect(groups).to_have_attribute("data-mode", "json")
    groups.locator("input[data-import]").set_input_files(
        {"name": "big.json", "mimeType": "application/json", "buffer": b" " * 5_000_000}
    )
    client_error = groups.locator("[data-client-error]")
    expect(client_error).to_have_text(
        "big.json is 4.8 MB: a filter file is at most 256 KB. Nothing was imported."
    )
    groups.locator("input[data-import]").set_input_files(
        {"name": "photo.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n\x1a\n\x00\xff\xfe"}
    )
    expect(client_error).to_have_text(
        "photo.png is not a text file (JSON is UTF-8 text). Nothing was imported."
    )

    # Fixed in the JSON view and saved from there.
    groups.locator("textarea[name=json]").fill(json.dumps(upload))
    groups.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("Saved the consumer group filters")
    assert json.loads(configs(link)[GROUPS]) == upload


def test_acl_rows_say_which_entry_is_wrong_and_preview_the_sources_acls(
    login, live_server, make_link
):
    link = make_link({"cluster.link.paused": "true"})
    page = login("operator")
    page.goto(f"{live_server.url}/links/destination/{link.name}/")
    acls = page.locator("#filters-acls")
    acls.get_by_role("button", name="Add filter").click()
    expect(acls.get_by_label("Principal of filter 1")).to_be_visible()
    acls.get_by_label("Resource type of filter 1").select_option("any")
    acls.get_by_label("Pattern type of filter 1").select_option("any")
    acls.get_by_label("Principal of filter 1").fill("alice")
    acls.get_by_role("button", name="Preview").click()
    expect(acls.locator('tr[data-error-of="1"]')).to_contain_text(
        "Entry 1 of aclFilters, accessFilter: principal 'alice' needs a type, e.g. User:alice."
    )
    acls.get_by_label("Principal of filter 1").fill(f"User:nobody-{link.link_id}")
    acls.get_by_role("button", name="Preview").click()
    expect(acls.locator(".preview")).to_contain_text("0 source ACLs selected")
    assert "acl.filters" not in configs(link)


def test_a_viewer_may_preview_but_not_save(login, live_server, make_link):
    link = make_link({"cluster.link.paused": "true"})
    page = login("viewer")
    page.goto(f"{live_server.url}/links/destination/{link.name}/")
    groups = page.locator("#filters-groups")
    add_row(groups, 1)
    fill_row(groups, 1, "*", "LITERAL", "INCLUDE")
    expect(groups.get_by_role("button", name="Save")).to_have_count(0)
    groups.get_by_role("button", name="Preview").click()
    expect(groups.locator(".preview")).to_contain_text(
        re.compile(r"\d+ of \d+ consumer groups? on the source selected")
    )
    # The form sent to the save route anyway (as a forged page would): refused, and said.
    status = page.evaluate(
        """async (url) => {
            const form = new FormData(document.querySelector("#filters-groups"));
            const response = await fetch(url, {method: "POST", body: new URLSearchParams(form)});
            return [response.status, await response.text()];
        }""",
        f"/links/destination/{link.name}/filters/save/",
    )
    assert status[0] == 403 and "Your role does not allow link.manage" in status[1]
    assert GROUPS not in configs(link)
