"""A bidirectional link is one object: its page shows both halves with their mirrors and flows,
and deleting it (console, API) deletes both halves, their mirrors' rows and flows, in one
audited action after the name is typed; refused whole while either half has live mirrors
unless forced, and nothing deleted when a forced failover fails. On in-memory clusters."""

from __future__ import annotations

import pytest
from django.urls import reverse as url

from devstack import kafka
from replication.core.errors import ReplicationError
from replication.cutover import link_deletion, reverse
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink, MergeFlow, MirrorTopic
from replication.states.mirror_states import move
from replication.topics import merge_flows
from replication.topics.links import peer_of
from replication.topics.mirrors import create_mirror

ACTOR = audit.Actor.system("tests")
State = MirrorTopic.State


def _link_with_both_halves_used(memory_mirror, make_topic, topic_name):
    """A bidirectional link whose half into the destination has a live mirror and whose half
    into the source has a live mirror and a merge flow: (half, other half)."""
    link, _ = memory_mirror(records=2)
    peer = peer_of(link)
    other = make_topic(kafka.DESTINATION, f"{topic_name}-b")
    create_mirror(ACTOR, peer, other)
    flowing = make_topic(kafka.DESTINATION, f"{topic_name}-f")
    merge_flows.create_flow(ACTOR, peer, flowing, f"{flowing}-merged")
    return link, peer


def test_the_link_page_shows_both_halves_with_their_mirrors_and_flows(
    memory_mirror, make_topic, topic_name, client_as
):
    link, peer = _link_with_both_halves_used(memory_mirror, make_topic, topic_name)
    page = client_as("viewer").get(url("link-detail", args=["destination", link.name]))
    text = page.content.decode()
    assert "Mirror topics from source into destination</h2>" in text
    assert 'id="other-half"' in text
    assert "The other half: mirror topics from destination into source</h2>" in text
    other_half = text[text.index('id="other-half"') :]
    assert f'<tr data-mirror="{topic_name}-b">' in other_half
    assert f'<tr data-flow="{peer.flows.get().name}">' in other_half
    assert 'id="other-half-flows"' in other_half and "Merge flows into source</h2>" in other_half


def test_deleting_a_bidirectional_link_is_refused_whole_while_either_half_has_live_mirrors(
    memory_mirror, make_topic, topic_name
):
    link, peer = _link_with_both_halves_used(memory_mirror, make_topic, topic_name)
    link.mirrors.update(state=State.STOPPED)  # this half has none live; the other has one

    with pytest.raises(ReplicationError) as refusal:
        link_deletion.delete_link(ACTOR, link)
    refused = str(refusal.value)
    assert f"still has mirror topics: {topic_name}-b on source" in refused
    assert "both halves (into destination and into source)" in refused
    assert ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).count() == 2
    assert AuditEvent.objects.filter(action="link.delete", result="refused").count() == 1


def test_a_forced_deletion_fails_over_both_halves_then_deletes_both_as_one_audited_action(
    memory_mirror, make_topic, topic_name
):
    link, peer = _link_with_both_halves_used(memory_mirror, make_topic, topic_name)
    (plan,) = [
        o for o in link_deletion.forced_failovers(link) if o.mirror_topic.endswith("-b on source")
    ]
    assert plan.mirror_topic == f"{topic_name}-b on source" and plan.error == ""

    link_deletion.delete_link(ACTOR, link, force=True)

    assert not ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).exists()
    assert not MirrorTopic.objects.filter(link__in=[link.pk, peer.pk]).exists()
    assert not MergeFlow.objects.filter(link=peer.pk).exists()
    (done,) = AuditEvent.objects.filter(action="link.delete", result="ok")
    assert (
        done.message == f"Deleted link {link.name}, both halves (into destination and into source)."
    )
    assert set(done.before) == {"destination", "source"}
    failovers = AuditEvent.objects.filter(action="mirror.failover", result="ok")
    assert {e.target for e in failovers} == {f"mirror {topic_name}", f"mirror {topic_name}-b"}


def test_a_failover_that_fails_on_one_half_leaves_both_halves(
    memory_mirror, make_topic, topic_name
):
    link, peer = _link_with_both_halves_used(memory_mirror, make_topic, topic_name)
    # A reverse under way on the other half: its mirror cannot be failed over now.
    stuck = peer.mirrors.get(mirror_topic=f"{topic_name}-b")
    move(stuck, "reverse", State.PENDING_SYNCHRONIZE, pending_stop={"kind": reverse.START})

    with pytest.raises(ReplicationError) as refusal:
        link_deletion.delete_link(ACTOR, link, force=True)
    refused = str(refusal.value)

    assert f"Could not fail over '{topic_name}-b' on source" in refused
    assert f"The halves were not deleted; failed over (now writable): {topic_name} on" in refused
    assert ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).count() == 2
    assert peer.flows.exists()


def test_the_console_and_the_api_delete_both_halves_after_the_name_is_typed(
    memory_mirror, make_topic, topic_name, client_as, api, registered_clusters
):
    link, peer = _link_with_both_halves_used(memory_mirror, make_topic, topic_name)
    admin = client_as("admin")
    delete = url("link-delete", args=["destination", link.name])
    page = admin.get(delete).content.decode()
    assert 'id="both-halves"' in page and 'data-half="source"' in page
    assert f'<ul id="to-fail-over-source"><li><code>{topic_name}-b</code></li></ul>' in page
    assert f"<code>{peer.flows.get().name}</code> into <code>{topic_name}-f-merged</code>" in page
    assert "deleting a link deletes no topic" in page and "Yes, delete both halves" in page
    assert "The source cluster is not touched" not in page
    admin.post(delete, {"confirm_name": "wrong", "force": "on"})
    assert ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).count() == 2

    # The API says what the link is (the other half, with its mirrors and flows) and deletes both.
    path = f"/kafka/v3/clusters/{registered_clusters['destination'].cluster_id}/links/{link.name}"
    answer = api("admin").get(path).json()
    assert answer["other_half"]["cluster_name"] == "source"
    assert answer["other_half"]["topic_names"] == [f"{topic_name}-b"]
    assert answer["other_half"]["flow_names"] == [peer.flows.get().name]
    assert api("admin").delete(f"{path}?force=true&validate_only=true").status_code == 204
    assert ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).count() == 2

    done = admin.post(delete, {"confirm_name": link.name, "force": "on"})

    assert done.status_code == 302
    assert not ClusterLink.objects.filter(pk__in=[link.pk, peer.pk]).exists()
