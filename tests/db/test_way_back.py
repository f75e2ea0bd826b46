"""The way back on a bidirectional link, on in-memory clusters: fail back after a reverse and
then a failover (which refused with "already a mirror" before), the actions each mirror offers
now and why the others cannot run (mirror_actions, the one answer behind the console's
buttons, the API's `actions` and `kafka-mirrors --describe --include-actions`), a reversed
topic shown as the primary with where its mirror is, and the reverse form's words."""

from __future__ import annotations

import pytest
from django.urls import reverse as url

from replication.cutover import mirror_actions, promote, restore, reverse
from replication.governance import audit
from replication.models import MirrorTopic
from replication.topics.links import peer_of

ACTOR = audit.Actor.system("tests")
State = MirrorTopic.State
FAIL_BACK = "truncate-and-restore"


@pytest.fixture
def reversed_mirror(memory_mirror, topic_name):
    """A 1-partition topic of 5 records mirrored over a bidirectional link, then reversed: (the
    stopped topic on the destination, now the primary; its old source on the source cluster,
    now a mirror of it)."""
    link, mirror = memory_mirror(records=5)
    reverse.reverse_mirrors(ACTOR, link, [topic_name], reverse.START)
    reverse.finish(link)
    reverse.finish(link)
    mirror.refresh_from_db()
    back = peer_of(link).mirrors.get(mirror_topic=topic_name)
    assert (mirror.state, back.state) == (State.STOPPED, State.ACTIVE)
    return mirror, back


def test_after_a_reverse_the_topic_is_the_primary_and_only_a_reverse_back_is_offered(
    reversed_mirror,
):
    mirror, back = reversed_mirror

    primary = mirror_actions.standing(mirror)
    assert primary.primary and primary.mirrored_by == back
    assert [c.action for c in primary.available] == []  # stopped: nothing to do on it
    fail_back = primary[FAIL_BACK].reason
    assert f"on {back.destination.name} already mirrors this topic over link" in fail_back
    assert "since its reverse" in fail_back and "reverse that mirror from its page" in fail_back

    mirror_of_it = mirror_actions.standing(back)
    assert not mirror_of_it.primary
    assert [c.action for c in mirror_of_it.available] == [
        "pause",
        "promote",
        "failover",
        "reverse-and-start-mirror",
        "reverse-and-pause-mirror",
        "verify",
    ]
    assert "is ACTIVE: fail back is the way back after a failover" in mirror_of_it[FAIL_BACK].reason
    assert "it is not paused" in mirror_of_it["resume"].reason


def test_fail_back_after_a_reverse_and_a_failover_makes_the_old_primary_a_mirror_again(
    reversed_mirror, topic_name, memory_clusters
):
    mirror, back = reversed_mirror
    old, new = memory_clusters["destination"], memory_clusters["source"]
    old.produce(topic_name, 0, 2)  # the primary took two more, copied across
    new.produce(topic_name, 0, 2)
    old.produce(topic_name, 0, 3)  # and three more, never copied: then it was lost
    (failed_over,) = promote.stop_mirrors(
        ACTOR, back.link, [topic_name], promote.FAILOVER, wait=True
    )
    assert failed_over.state == State.STOPPED, failed_over.error
    new.produce(topic_name, 0, 4)  # the new primary's own
    back.refresh_from_db()
    mirror.refresh_from_db()

    # Fail back is offered where it runs (the newer primary's page), not on the old primary.
    assert mirror_actions.standing(back)[FAIL_BACK].available
    refused = mirror_actions.standing(mirror)[FAIL_BACK].reason
    assert f"Topic {topic_name!r} on source became writable after" in refused
    assert "it is the newer primary" in refused
    (wrong_way,) = restore.truncate_and_restore(ACTOR, back.link, [topic_name], validate_only=True)
    assert wrong_way.status == 409 and wrong_way.error == refused

    link = mirror.link  # the old primary's half: the restore runs there
    (plan,) = restore.truncate_and_restore(ACTOR, link, [topic_name], validate_only=True)
    assert plan.error == ""
    assert [(p["offset_truncated_to"], p["messages_truncated"]) for p in plan.partitions] == [
        (7, 3)
    ]
    shared = old.records(topic_name, 0)[:7]

    (outcome,) = restore.truncate_and_restore(ACTOR, link, [topic_name], wait=True)

    assert outcome.error == "" and outcome.state == State.ACTIVE
    restored = link.mirrors.get(mirror_topic=topic_name)  # the reverse's record gave way
    assert restored.pk != mirror.pk and restored.state == State.ACTIVE
    assert restored.stop_report["records_to_copy"] == {"0": 4}
    assert [(r.offset, r.value) for r in old.records(topic_name, 0)] == [
        (r.offset, r.value) for r in shared
    ]
    assert len(old.records(outcome.quarantine, 0)) == 3
    # Failed back: nothing more to fail back; the primary says where its mirror is.
    now = mirror_actions.standing(back)
    assert now.primary and now.mirrored_by == restored
    assert "again since its fail back" in now[FAIL_BACK].reason
    assert mirror_actions.standing(restored)[reverse.START].available


def test_the_mirror_page_offers_only_what_can_run_and_says_why_not(
    reversed_mirror, topic_name, client_as
):
    mirror, back = reversed_mirror
    operator = client_as("operator")
    page = operator.get(url("mirror-detail", args=["destination", topic_name])).content.decode()
    for offered in ('id="fail-back"', 'id="promote"', 'id="failover"', 'id="reverse"'):
        assert offered not in page
    assert 'id="primary"' in page
    assert f'href="{url("mirror-detail", args=["source", topic_name])}"' in page
    assert f"over link {back.link.name} (ACTIVE)" in page
    assert '<li data-action="truncate-and-restore"><strong>Fail back</strong>: ' in page

    page = operator.get(url("mirror-detail", args=["source", topic_name])).content.decode()
    assert 'id="reverse"' in page and 'id="fail-back"' not in page and 'id="primary"' not in page
    # The reverse form says what a reverse does and how to go back, not "cannot be undone".
    form = operator.get(url("mirror-reverse", args=["source", topic_name])).content.decode()
    assert 'id="way-back"' in form and "The way back is another reverse" in form
    assert "A reverse is undone by reversing back" in form and "cannot be undone" not in form
    empty = operator.post(url("mirror-reverse", args=["source", topic_name]), {"reason": "r"})
    assert f"Type {topic_name} to confirm: a reverse is undone by reversing back" in (
        empty.content.decode()
    )
    # The link page's way-back column: the primary needs none, its mirror offers a reverse.
    link_page = operator.get(url("link-detail", args=["destination", mirror.link.name]))
    assert "none needed: the primary" in link_page.content.decode()
    assert "primary, mirrored on source" in link_page.content.decode()


def test_the_api_answers_each_mirrors_actions_and_where_a_primarys_mirror_is(
    reversed_mirror, topic_name, api, registered_clusters
):
    mirror, back = reversed_mirror
    destination = registered_clusters["destination"]
    path = f"/kafka/v3/clusters/{destination.cluster_id}/links/{mirror.link.name}/mirrors"
    answer = api("viewer").get(f"{path}/{topic_name}").json()

    actions = {a["action"]: a for a in answer["actions"]}
    assert not any(a["available"] for a in actions.values())
    assert "since its reverse" in actions[FAIL_BACK]["reason"]
    assert answer["mirrored_by"] == {
        "cluster_id": registered_clusters["source"].cluster_id,
        "cluster_name": "source",
        "link_name": back.link.name,
        "mirror_topic_name": topic_name,
        "mirror_status": "ACTIVE",
    }
    (listed,) = api("viewer").get(path).json()["data"]
    assert listed["actions"] == answer["actions"]
