"""A bidirectional link is one object in the browser: its page shows the other half's mirrors,
and deleting it deletes both halves, forced, once its name is typed."""

import pytest
from playwright.sync_api import expect

from devstack import kafka
from replication.governance import audit
from replication.models import ClusterLink
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.e2e.conftest import screenshots

pytestmark = pytest.mark.e2e

ACTOR = audit.Actor.system("tests")


def test_an_admin_deletes_a_bidirectional_link_both_halves_once_its_name_is_typed(
    login, live_server, bidirectional, make_topic, topic_name
):
    link = bidirectional(**{"cluster.link.paused": "true"})
    peer = peer_of(link)
    make_topic(kafka.DESTINATION, topic_name)
    create_mirror(ACTOR, peer, topic_name)  # a mirror on the other half, into the source

    page = login("admin")
    page.goto(f"{live_server.url}/links/destination/{link.name}/")
    expect(page.locator(f'#other-half tr[data-mirror="{topic_name}"]')).to_be_visible()
    screenshots(page, "bidirectional-link")
    page.get_by_role("link", name="Delete", exact=True).click()
    expect(page.locator("#both-halves")).to_be_visible()
    expect(page.locator("#to-fail-over-source")).to_have_text(topic_name)
    screenshots(page, "bidirectional-link-delete")
    page.check("#id_force")
    page.fill("#id_confirm_name", "not-the-name")
    page.get_by_role("button", name="Yes, delete both halves").click()
    expect(page.get_by_role("alert").first).to_contain_text(f"Type {link.name} to confirm")
    page.fill("#id_confirm_name", link.name)
    page.get_by_role("button", name="Yes, delete both halves").click()

    page.wait_for_url(f"{live_server.url}/links/")
    expect(page.get_by_role("status")).to_contain_text(f"Deleted cluster link {link.name}")
    assert not ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).exists()
    # The failed-over mirror stays on the source as an ordinary topic.
    leftovers.delete_topics(kafka.SOURCE, [topic_name])
