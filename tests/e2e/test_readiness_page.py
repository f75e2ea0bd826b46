"""The readiness page in the browser: a link's mirror with its promote preconditions, yes or
no with why, and its last drill; it fits a desktop and a phone; an operator's Drill now on a
paused link is refused in words, and nothing starts."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from devstack import kafka
from replication.governance import audit
from replication.models import DrillRun, canary_topic
from replication.observe import lag
from replication.topics.mirrors import create_mirror
from tests.e2e.conftest import screenshot
from tests.e2e.test_layout import _problems

pytestmark = pytest.mark.e2e

ACTOR = audit.Actor.system("tests")
# A drill's steps as a one-way link's drill keeps them (the drill itself is the integration
# test's): shown on its page.
STEPS = [
    ("Create the canary on the source", 0.4, "topic isthmus-drill.orders on source, 2 partitions"),
    ("Write records to it", 0.3, "20 records written over 2 partitions"),
    ("Mirror it over the link", 0.5, "mirror isthmus-drill.orders on destination, ACTIVE"),
    ("Wait until the mirror is caught up", 4.2, "caught up: ends {0: 10, 1: 10} on both"),
    ("Fail the mirror over", 2.1, "failed over: STOPPED at {'0': 10, '1': 10}"),
    (
        "Check the promoted canary: every record, and writable",
        1.1,
        "holds the 20 records exactly; took a write at partition 0 offset 10",
    ),
    (
        "Delete the promoted canary and its source",
        1.3,
        "deleted the promoted isthmus-drill.orders and its source isthmus-drill.orders",
    ),
]


def test_an_operator_reads_a_links_readiness_and_a_drill_of_a_paused_link_is_refused(
    login, live_server, make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.paused": "true"})
    create_mirror(ACTOR, link, topic_name)
    lag.sample_all()
    finished = timezone.now()
    DrillRun.objects.create(
        link=link,
        started_by="operator",
        canary=canary_topic(link),
        outcome="PASSED",
        way_back="delete",
        failover_seconds=2.1,
        failback_seconds=1.3,
        started_at=finished - timedelta(seconds=31),
        finished_at=finished,
        steps=[
            {"name": name, "seconds": seconds, "words": words, "passed": True}
            for name, seconds, words in STEPS
        ],
    )

    page = login("operator")
    page.goto(f"{live_server.url}/readiness/")
    section = page.locator(f'section[data-link="{link.name}"]')
    row = section.locator(f'tr[data-mirror="{topic_name}"]')
    expect(row.locator('[data-check="caught up"]')).to_have_attribute("data-met", "yes")
    groups = row.locator('[data-check="consumer groups synced"]')
    expect(groups).to_have_attribute("data-met", "no")
    expect(groups).to_contain_text("Consumer offset sync is off")
    expect(section.locator("[data-last-drill]")).to_contain_text("took 31.0 s (failover 2.1 s")
    for width, name in ((1280, "readiness"), (390, "readiness-phone")):
        page.set_viewport_size({"width": width, "height": 900})
        assert not _problems(page, name, width)
        screenshot(page, name)

    page.set_viewport_size({"width": 1280, "height": 900})
    section.get_by_role("link", name="its steps").click()
    expect(page.locator("#drill-steps tr")).to_have_count(len(STEPS) + 1)
    expect(page.locator("[data-cleanup]")).to_have_text("nothing of the canary is left")
    screenshot(page, "drill")

    page.goto(f"{live_server.url}/readiness/")
    section.get_by_role("button", name="Drill now").click()
    expect(page.get_by_role("status").first).to_contain_text(
        f"Link {link.name} is PAUSED: a drill fails a canary over and back on a running link"
    )
    assert not DrillRun.objects.filter(link=link, outcome="RUNNING").exists()
