"""The scenario pages in Chromium: an admin goes through share-data a step at a time, watching
each step's result arrive, then runs the rest and sees every step pass; the run removes what
it made."""

import re

import pytest
from django.test import override_settings
from playwright.sync_api import expect

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from replication.models import AuditEvent, ScenarioRun
from tests.conftest import admin_config
from tests.e2e.conftest import screenshot
from tests.leftovers import unique_name
from tests.mirror_checks import topic_gone

pytestmark = pytest.mark.e2e

STEP_S = 60_000  # a step, with the worker taking it up, in ms


def test_an_admin_runs_share_data_step_by_step_then_the_rest_and_sees_every_step_pass(
    login, live_server, scenario_worker, registered_clusters
):
    page = login("admin")
    page.get_by_role("link", name="Scenarios").click()
    with override_settings(SCENARIO_NAME_PREFIX=unique_name("guided")):
        page.locator("#scenario-share-data").get_by_role("button", name="Step by step").click()
        page.wait_for_url(re.compile(r"/scenarios/runs/\d+/$"))
    run = ScenarioRun.objects.get()
    expect(page.locator("h1 .badge")).to_have_text("Waiting")
    expect(page.locator("#run-summary")).to_contain_text("0 of 14 steps done")
    expect(page.locator("#step-1 pre.cli")).to_contain_text(
        f"kafka-topics --create --topic {run.names['topic']}"
    )

    for done in (1, 2):
        page.get_by_role("button", name=f"Run step {done}").click()
        # The page follows the run by itself until the step is done.
        expect(page.locator(f"#step-{done}")).to_have_attribute(
            "data-status", "PASSED", timeout=STEP_S
        )
        expect(page.locator("#run-summary")).to_contain_text(f"{done} of 14 steps done")
        expect(page.get_by_role("progressbar")).to_have_attribute("aria-valuenow", str(done))
    expect(page.locator("#step-2 dd").last).to_contain_text("first, second and third written")
    assert run.names["topic"] in KafkaAdmin(admin_config(kafka.SOURCE)).list_topic_names()
    page.set_viewport_size({"width": 1280, "height": 900})
    screenshot(page, "scenario-run")

    # The rest at once: the page follows it to the end, every step green.
    page.get_by_role("button", name="Run the rest").click()
    expect(page.locator("h1 .badge")).to_have_text("Passed", timeout=4 * STEP_S)
    expect(page.locator('li.step[data-status="PASSED"]')).to_have_count(14)
    expect(page.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "14")
    expect(page.get_by_role("button", name="Run step 3")).to_have_count(0)
    topic_gone(kafka.SOURCE, run.names["topic"])
    assert list(
        AuditEvent.objects.filter(action__startswith="scenario.", actor_name="admin")
        .order_by("pk")
        .values_list("action", flat=True)
    ) == ["scenario.start", "scenario.next", "scenario.next", "scenario.rest", "scenario.finish"]

    # The overview shows the run's activity.
    page.get_by_role("link", name="Isthmus").click()
    expect(page.locator("#dashboard-events")).to_contain_text("scenario.finish")
    screenshot(page, "overview")


def test_a_scenario_that_stops_the_source_asks_for_its_name_and_lists_the_links_cut_off(
    login, live_server, make_link
):
    link = make_link({"cluster.link.paused": "true"})
    page = login("admin")
    page.get_by_role("link", name="Scenarios").click()
    card = page.locator("#scenario-disaster-recovery")
    expect(card.locator("[data-disrupts]")).to_contain_text("Stops the whole source cluster")
    card.get_by_role("link", name="Step by step").click()

    expect(page.locator("#disruption")).to_contain_text("stops the whole source cluster")
    expect(page.locator("#links-cut-off")).to_contain_text(link.name)
    page.fill("#id_confirm_name", "disaster")
    page.get_by_role("button", name=re.compile("Yes, stop the source cluster")).click()
    expect(page.get_by_role("status")).to_contain_text("type its name to confirm")
    assert not ScenarioRun.objects.exists()

    page.fill("#id_confirm_name", "disaster-recovery")
    page.get_by_role("button", name=re.compile("Yes, stop the source cluster")).click()
    page.wait_for_url(re.compile(r"/scenarios/runs/\d+/$"))
    expect(page.locator("h1 .badge")).to_have_text("Waiting")  # nothing ran yet
    run = ScenarioRun.objects.get()
    assert run.scenario == "disaster-recovery"
    run.delete()  # no step ran: there is nothing to clean up
