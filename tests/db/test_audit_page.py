"""The audit trail page and its CSV export. Only the database is needed, not Kafka."""

import csv
import datetime as dt
import io
import re
from unittest import mock

import pytest
from django.db import transaction
from django.urls import reverse

from console.access import ROLES
from console.csv_cells import FORMULA_STARTS
from replication.core.text import control_characters
from replication.governance import audit
from replication.models import AuditEvent

pytestmark = pytest.mark.db

ACTION_SELECT = re.compile(r'<select name="action"[^>]*>(.*?)</select>', re.S)


def actor(name, address="10.0.0.1"):
    return audit.Actor(name=name, address=address, user_agent="pytest")


def at(moment: str):
    """Record the events made inside this block at `moment` (UTC)."""
    when = dt.datetime.fromisoformat(moment).replace(tzinfo=dt.UTC)
    return mock.patch("django.utils.timezone.now", return_value=when)


def shown_targets(response) -> list[str]:
    assert response.status_code == 200
    return re.findall(r'<td class="target">(.*?)</td>', response.content.decode())


@pytest.fixture
def events(db):
    """Five events from different people, actions, results and times."""
    with at("2026-03-01T10:00:00"):
        audit.record(actor("Alice"), "link.create", "link east", after={"state": "ACTIVE"})
    with at("2026-03-01T11:30:20"):
        audit.record(
            actor("bob"),
            "mirror.create",
            "mirror orders",
            result=AuditEvent.Result.REFUSED,
            message="Topic orders does not exist on the source.",
        )
    with at("2026-03-02T09:00:00"):
        audit.record(actor("alice (API token 'ci')"), "link.pause", "link west")
    with at("2026-03-02T09:15:00"):
        audit.record(
            actor("reconciler", address=None),
            "mirror.grow",
            "mirror payments",
            result=AuditEvent.Result.FAILED,
            before={"partitions": 2},
            after={"partitions": 4},
        )
    with at("2026-03-03T00:00:00"):
        audit.record(actor("carol"), "link.create", "link north")


def test_it_lets_every_role_view_the_audit_trail(client_as, events):
    for role in ROLES:
        page = client_as(role).get(reverse("audit"))
        assert page.status_code == 200, role
        assert shown_targets(page) == [
            "link north",
            "mirror payments",
            "link west",
            "mirror orders",
            "link east",
        ]
        assert 'href="/audit/" aria-current="page"' in page.content.decode()


def test_it_sends_anonymous_users_to_login(client, db):
    for url in (reverse("audit"), reverse("audit-export")):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(f"/login/?next={url}")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"actor": "ALICE"}, ["link west", "link east"]),
        ({"target": "mirror"}, ["mirror payments", "mirror orders"]),
        ({"action": "link.create"}, ["link north", "link east"]),
        ({"result": "refused"}, ["mirror orders"]),
        ({"result": "failed"}, ["mirror payments"]),
        ({"from": "2026-03-02T09:00"}, ["link north", "mirror payments", "link west"]),
        ({"to": "2026-03-01T11:30"}, ["mirror orders", "link east"]),  # the whole minute
        ({"to": "2026-03-01T11:30:19"}, ["link east"]),
        (
            {"from": "2026-03-01T11:00", "to": "2026-03-02T09:00", "actor": "alice"},
            ["link west"],
        ),
        ({"actor": "nobody"}, []),
    ],
)
def test_it_narrows_the_events_by_each_filter(client_as, events, query, expected):
    assert shown_targets(client_as("viewer").get(reverse("audit"), query)) == expected


def test_it_offers_the_actions_present_and_keeps_the_chosen_filters(client_as, events):
    page = client_as("viewer").get(reverse("audit"), {"action": "link.pause", "actor": "ali"})
    html = page.content.decode()
    options = re.findall(r'<option value="([^"]*)"', ACTION_SELECT.search(html).group(1))
    assert options == ["", "link.create", "link.pause", "mirror.create", "mirror.grow"]
    assert '<option value="link.pause" selected>' in html
    assert 'name="actor" value="ali"' in html
    assert 'href="/audit/export.csv?action=link.pause&amp;actor=ali"' in html


def test_it_shows_time_address_result_message_and_the_change(client_as, events):
    html = client_as("viewer").get(reverse("audit"), {"result": "failed"}).content.decode()
    assert "2026-03-02 09:15:00" in html
    assert 'data-result="failed"' in html and 'class="badge bad"' in html
    assert "<details><summary>before / after</summary>" in html
    assert "{&quot;partitions&quot;:2}" in html and "{&quot;partitions&quot;:4}" in html
    html = client_as("viewer").get(reverse("audit"), {"result": "refused"}).content.decode()
    assert "10.0.0.1" in html and "Topic orders does not exist on the source." in html
    assert "<details>" not in html  # nothing changed, nothing to unfold


def seed(count: int, action="link.pause"):
    """`count` events in one go (save() is guarded, bulk_create is not): `t0` is the oldest."""
    AuditEvent.objects.bulk_create(
        [
            AuditEvent(actor_name="seed", action=action, target=f"t{i}", result="ok")
            for i in range(count)
        ],
        batch_size=2000,
    )


def test_it_pages_a_hundred_events_at_a_time_newest_first(client_as, db):
    seed(250)
    client = client_as("viewer")
    first = client.get(reverse("audit"))
    assert shown_targets(first) == [f"t{i}" for i in range(249, 149, -1)]
    older = re.search(r'<a href="\?([^"]*)" rel="next">', first.content.decode()).group(1)
    assert 'rel="prev"' not in first.content.decode()

    second = client.get(reverse("audit") + "?" + older.replace("&amp;", "&"))
    assert shown_targets(second) == [f"t{i}" for i in range(149, 49, -1)]
    html = second.content.decode()
    newer = re.search(r'<a href="\?([^"]*)" rel="prev">', html).group(1)
    assert shown_targets(client.get(reverse("audit") + "?" + newer)) == shown_targets(first)

    third = re.search(r'<a href="\?([^"]*)" rel="next">', html).group(1)
    last = client.get(reverse("audit") + "?" + third)
    assert shown_targets(last) == [f"t{i}" for i in range(49, -1, -1)]
    assert 'rel="next"' not in last.content.decode()


def test_it_pages_within_the_filter(client_as, db):
    seed(150, action="link.pause")
    seed(150, action="link.resume")
    client = client_as("viewer")
    first = client.get(reverse("audit"), {"action": "link.resume"})
    older = re.search(r'<a href="\?([^"]*)" rel="next">', first.content.decode()).group(1)
    assert "action=link.resume" in older
    second = client.get(reverse("audit") + "?" + older.replace("&amp;", "&"))
    assert shown_targets(second) == [f"t{i}" for i in range(49, -1, -1)]
    assert set(re.findall(r"<code>(link\.\w+)</code>", second.content.decode())) == {"link.resume"}


def read_csv(response) -> list[list[str]]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="isthmus-audit-')
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_it_exports_the_filtered_events_as_csv(client_as, events):
    rows = read_csv(client_as("viewer").get(reverse("audit-export"), {"target": "mirror"}))
    assert rows[0] == [
        "at",
        "actor",
        "address",
        "user_agent",
        "action",
        "target",
        "result",
        "message",
        "before",
        "after",
        "topics",
        "break_glass",
    ]
    assert rows[1:] == [
        [
            "2026-03-02T09:15:00+00:00",
            "reconciler",
            "",
            "pytest",
            "mirror.grow",
            "mirror payments",
            "failed",
            "",
            '{"partitions":2}',
            '{"partitions":4}',
            "payments",
            "",
        ],
        [
            "2026-03-01T11:30:20+00:00",
            "bob",
            "10.0.0.1",
            "pytest",
            "mirror.create",
            "mirror orders",
            "refused",
            "Topic orders does not exist on the source.",
            "",
            "",
            "orders",
            "",
        ],
    ]


def test_it_neutralises_spreadsheet_formulas_in_the_csv(client_as, db):
    audit.record(actor("=cmd|' /C calc'!A0"), "link.create", "+1", message="@SUM(A1)")
    audit.record(actor("-2"), "link.create", "safe", message="a=b")
    rows = read_csv(client_as("viewer").get(reverse("audit-export")))
    by_target = {row[5]: row for row in rows[1:]}
    assert by_target["'+1"][1] == "'=cmd|' /C calc'!A0"
    assert by_target["'+1"][7] == "'@SUM(A1)"
    assert by_target["safe"][1] == "'-2"
    assert by_target["safe"][7] == "a=b"


def test_no_field_of_the_csv_starts_a_formula_even_split_naively_on_semicolons_or_commas(
    client_as, db
):
    audit.record(
        actor('mallory;=HYPERLINK("http://evil","open"),+1'),
        "link.create",
        "link a;\"=cmd|' /C calc'!A0\", b",
        message="fine, -2; @SUM(A1);  =1",
        after={"note": "x;=1", "list": ["=2", "+3"]},
    )
    body = b"".join(client_as("viewer").get(reverse("audit-export")).streaming_content).decode()
    lines = body.split("\r\n")[:-1]
    assert len(lines) == 2
    for line in lines:
        assert line.startswith('"') and line.endswith('"')  # every cell quoted
        for separator in ";,":
            for field in line.split(separator):
                start = re.sub(r'^[\s"]+', "", field)
                assert not start.startswith(FORMULA_STARTS), (separator, field)
    [row] = list(csv.reader(io.StringIO(body)))[1:]
    assert row[1] == 'mallory;\'=HYPERLINK("http://evil","open"),\'+1'
    assert row[5] == "link a;\"'=cmd|' /C calc'!A0\", b"
    assert row[7] == "fine, '-2; '@SUM(A1);  '=1"


def test_control_characters_are_escaped_in_the_csv(client_as, db):
    # Stored as older data may hold them, before the door refused them.
    audit.record(
        audit.Actor(name="mallory\x1b]0;owned\x07", address="10.0.0.1", user_agent="\u202eevil"),
        "link.create",
        "link\ta",
        message="cleared\x1b[2J\r\n=1\x9b",
        # JSON escapes C0 controls, not these (no NUL: PostgreSQL's jsonb refuses it)
        after={"reason": "x\x01y\u202e\x9b"},
    )
    body = b"".join(client_as("viewer").get(reverse("audit-export")).streaming_content).decode()
    assert control_characters(body.replace("\r\n", "")) == []  # only the rows' own line ends
    [row] = list(csv.reader(io.StringIO(body)))[1:]
    assert row[1] == "mallory\\x1b]0;owned\\x07"
    assert row[3] == "\\u202eevil"
    assert row[5] == "link\\ta"
    assert row[7] == "cleared\\x1b[2J\\r\\n=1\\x9b"
    assert row[9] == '{"reason":"x\\u0001y\\u202e\\x9b"}'


def test_the_page_shows_control_and_bidirectional_characters_as_escapes(client_as, db):
    audit.record(
        audit.Actor(name="mallory\x1b]0;owned\x07", address="10.0.0.1", user_agent="x"),
        "link.create",
        "link evil\u202egnp.exe",
        result=AuditEvent.Result.REFUSED,
        message="Link name 'a\u202eb\x1b[2J' is not valid.",
        after={"reason": "x\u202e\x9b"},
    )
    html = client_as("viewer").get(reverse("audit")).content.decode()
    assert control_characters(html, multiline=True) == []
    assert "mallory\\x1b]0;owned\\x07" in html
    assert '<td class="target">link evil\\u202egnp.exe</td>' in html
    assert "Link name &#x27;a\\u202eb\\x1b[2J&#x27; is not valid." in html
    assert "x\\u202e\\x9b" in html


def test_it_escapes_html_in_what_it_shows(client_as, db):
    audit.record(
        actor("<b>mallory</b>"),
        "link.create",
        "<script>alert(1)</script>",
        after={"x": "<img src=x onerror=alert(2)>"},
    )
    html = client_as("viewer").get(reverse("audit")).content.decode()
    assert "<script>alert(1)</script>" not in html and "<b>mallory</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;mallory&lt;/b&gt;" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html


def test_it_explains_a_bad_date_instead_of_failing(client_as, events):
    client = client_as("viewer")
    response = client.get(reverse("audit"), {"from": "yesterday", "to": "2026-02-30T10:00"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("Enter a date and time like 2026-05-01T14:30 (UTC).") == 2
    assert "Fix the filter above to see events." in html
    assert shown_targets(response) == []
    export = client.get(reverse("audit-export"), {"from": "yesterday"})
    assert export.status_code == 400
    assert "Enter a date and time" in export.content.decode()


def test_it_refuses_to_change_or_delete_audit_events(events):
    event = AuditEvent.objects.get(target="link east")
    event.message = "nothing happened"
    attempts = [
        event.save,
        event.delete,
        lambda: AuditEvent.objects.filter(pk=event.pk).update(message="nothing happened"),
        lambda: AuditEvent.objects.bulk_update([event], ["message"]),
        lambda: AuditEvent.objects.all().delete(),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError, match="append-only"), transaction.atomic():
            attempt()
    assert AuditEvent.objects.count() == 5
    assert AuditEvent.objects.get(pk=event.pk).message == ""


def test_it_keeps_a_deleted_users_events_under_their_name(users):
    operator = users["operator"]
    audit.record(audit.Actor(user=operator, name="operator"), "link.pause", "link east")
    operator.delete()
    event = AuditEvent.objects.get(target="link east")
    assert event.actor is None and event.actor_name == "operator"


def test_it_renders_page_one_of_20000_events_in_a_few_queries(
    client_as, db, django_assert_max_num_queries
):
    seed(19_000, action="link.pause")
    seed(1_000, action="mirror.failover")
    client = client_as("viewer")
    with django_assert_max_num_queries(8):
        page = client.get(reverse("audit"))
    assert shown_targets(page)[:2] == ["t999", "t998"]  # the failovers were recorded last
    with django_assert_max_num_queries(8):
        page = client.get(
            reverse("audit"), {"result": "ok", "actor": "see", "action": "link.pause"}
        )
    assert len(shown_targets(page)) == 100


def test_events_are_found_by_the_topic_they_concern_and_break_glass_is_a_filter(
    db, client_as, users
):
    asked = {"id": 7, "action": "promote", "topics": ["orders", "payments"]}
    audit.record(actor("operator"), "request.promote", "2 mirror topics of link ab", after=asked)
    audit.record(actor("approver"), "request.approve", "request 7", after=asked)
    audit.record(audit.Actor.system("approvals"), "request.done", "request 7", after=asked)
    audit.record(audit.Actor.system("promote"), "mirror.stopped", "mirror orders")
    audit.record(
        actor("admin"), "mirror.failover", "mirror refunds", message="BREAK GLASS: dc1 gone"
    )
    audit.record(actor("operator"), "link.pause", "link ab")
    viewer = client_as("viewer")

    def shown(**query) -> list[tuple[str, str]]:
        page = viewer.get(reverse("audit"), query).content.decode()
        rows = re.findall(r"<tr data-event.*?</tr>", page, re.S)
        return [
            (
                re.search(r"<code>(.*?)</code>", row)[1],
                re.search(r"<td>(.*?)</td>", row[row.index("</time>") :])[1],
            )
            for row in rows
        ]

    assert shown(topic="orders") == [
        ("mirror.stopped", "system (promote)"),
        ("request.done", "system (approvals)"),
        ("request.approve", "approver"),
        ("request.promote", "operator"),
    ]
    assert shown(topic="refunds") == shown(break_glass="on") == [("mirror.failover", "admin")]
    page = viewer.get(reverse("audit"), {"break_glass": "on"}).content.decode()
    assert '<span class="badge bad" data-break-glass>break glass</span>' in page
    # The approval's row names its topics, since its target does not.
    approve = viewer.get(reverse("audit"), {"action": "request.approve"}).content.decode()
    assert '<small class="hint topics">topics: orders, payments</small>' in approve
    export = viewer.get(reverse("audit-export"), {"break_glass": "on"})
    rows = list(csv.reader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert rows[0][-2:] == ["topics", "break_glass"] and rows[1][-2:] == ["refunds", "yes"]
