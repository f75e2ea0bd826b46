"""Verifications asked for, at the door: a range beyond Kafka's 64-bit offsets is refused in
words (a 400 in the API, a form error on the page), never by the database as a 500; one
verification of a mirror runs at a time (the next refused 409, naming it, however close
together they come); and several mirrors at once start all or none. Only the database is
needed: the verification is handed to a worker after commit, which is stubbed here."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.urls import reverse

from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink, KafkaCluster, MirrorTopic, Verification
from replication.observe import verification_requests

ACTOR = audit.Actor(name="tests")
State = MirrorTopic.State


@pytest.fixture
def handed_over(monkeypatch) -> list[int]:
    """The verifications handed to a worker (after their transaction committed)."""
    found: list[int] = []
    monkeypatch.setattr(verification_requests, "_hand_over", lambda started: found.extend(started))
    return found


@pytest.fixture
def link(db) -> ClusterLink:
    cluster = KafkaCluster.objects.create(
        name="dc2", bootstrap_servers="127.0.0.1:1", cluster_id="dc2-id"
    )
    return ClusterLink.objects.create(name="from-dc1", destination=cluster, source_cluster_id="x")


def mirror(link: ClusterLink, name: str, state: str = State.ACTIVE) -> MirrorTopic:
    return MirrorTopic.objects.create(
        link=link, destination=link.destination, source_topic=name, mirror_topic=name, state=state
    )


def api_verify(client, link: ClusterLink, body: dict):
    url = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/mirrors:verify"
    return client.post(url, body, content_type="application/json")


# Offsets beyond 64 bits. -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("offsets", "said"),
    [
        ({"to_offset": 2**63}, "The range's end must be an offset from 0 to 9223372036854775807"),
        ({"to_offset": 10**30}, "it was 1000000000000000000000000000000."),
        ({"from_offset": 10**20}, "The range's start must be an offset from 0 to"),
        ({"from_offset": 10**40, "to_offset": 10**41}, "it was over 10^30."),
        ({"from_offset": -1}, "The range's start must be an offset"),
    ],
)
def test_offsets_past_64_bits_are_refused_in_words_by_the_api(
    client_as, link, handed_over, offsets, said
):
    chosen = mirror(link, "orders")
    response = api_verify(
        client_as("operator"), link, {"mirror_topic_names": ["orders"], **offsets}
    )
    assert response.status_code == 400, response.content
    assert said in response.json()["message"]
    assert not Verification.objects.exists() and handed_over == []
    refused = AuditEvent.objects.get(action="mirror.verify")
    assert (refused.result, refused.target) == ("refused", f"mirror {chosen.mirror_topic}")


@pytest.mark.django_db
def test_the_domain_refuses_them_too(link, handed_over):
    chosen = mirror(link, "orders")
    for first, end in ((None, 2**63), (2**63, None), (10**20, None)):
        with pytest.raises(
            ReplicationError, match="must be an offset from 0 to 9223372036854775807"
        ):
            verification_requests.start(ACTOR, chosen, first, end)
    assert verification_requests.start(ACTOR, chosen, 0, 2**63 - 1).to_offset == 2**63 - 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"to_offset": str(2**63)}, "An offset is at most 9223372036854775807"),
        ({"from_offset": str(10**20)}, "An offset is at most 9223372036854775807"),
        ({"to_offset": "9" * 5000}, "Enter an offset: a whole number from 0 to"),
    ],
)
def test_the_verify_form_refuses_them_as_a_field_error(client_as, link, handed_over, form, said):
    chosen = mirror(link, "orders")
    url = reverse("mirror-verify", args=[link.destination.name, chosen.mirror_topic])
    response = client_as("operator").post(url, form)
    assert response.status_code == 200
    assert said in response.content.decode()
    assert not Verification.objects.exists()


# One at a time. ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_second_verification_of_a_mirror_is_refused_409_naming_the_running_one(
    client_as, link, handed_over
):
    mirror(link, "orders")
    client = client_as("operator")
    first = api_verify(client, link, {"mirror_topic_names": ["orders"]})
    assert first.status_code == 202
    running = first.json()["data"][0]["verification_id"]
    again = api_verify(client, link, {"mirror_topic_names": ["orders"]})
    assert again.status_code == 409
    message = again.json()["message"]
    assert f"is being verified already: verification {running}, asked for by operator" in message
    assert "waits for a worker to start it" in message and "wait for it to finish" in message
    assert Verification.objects.count() == 1

    # Once it ended, the next may start.
    Verification.objects.update(state=Verification.State.IDENTICAL)
    assert api_verify(client, link, {"mirror_topic_names": ["orders"]}).status_code == 202
    assert Verification.objects.count() == 2


@pytest.mark.django_db
def test_the_verify_page_shows_the_refusal(client_as, link, handed_over):
    chosen = mirror(link, "orders")
    running = verification_requests.start(ACTOR, chosen)
    url = reverse("mirror-verify", args=[link.destination.name, chosen.mirror_topic])
    response = client_as("operator").post(url, {"from_offset": "0"})
    assert response.status_code == 200
    assert f"verification {running.pk}, asked for by tests" in response.content.decode()
    assert Verification.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_requests_at_once_start_one_verification(link, handed_over, monkeypatch):
    chosen = mirror(link, "orders")
    # Each request waits a moment between finding no verification running and making its
    # own: without the lock, both would find none and both would start.
    checked = verification_requests._refusal

    def slow(*args):
        found = checked(*args)
        time.sleep(0.3)
        return found

    monkeypatch.setattr(verification_requests, "_refusal", slow)
    together = threading.Barrier(2)
    outcomes: list[object] = []

    def ask() -> None:
        try:
            together.wait()
            outcomes.append(verification_requests.start(ACTOR, chosen))
        except ReplicationError as exc:
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    started = [o for o in outcomes if isinstance(o, Verification)]
    refused = [o for o in outcomes if isinstance(o, ReplicationError)]
    assert len(started) == 1 and len(refused) == 1, outcomes
    assert refused[0].status == 409 and "is being verified already" in str(refused[0])
    assert Verification.objects.count() == 1
    assert handed_over == started


# Many at once: all or none. ------------------------------------------------------------------


@pytest.mark.django_db
def test_verifying_by_pattern_starts_all_or_none(client_as, link, handed_over):
    for name in ("orders.a", "orders.b", "orders.c", "orders.d"):
        mirror(link, name)
    busy = verification_requests.start(ACTOR, MirrorTopic.objects.get(mirror_topic="orders.c"))
    client = client_as("operator")
    refused = api_verify(client, link, {"mirror_topic_name_pattern": "orders\\..*"})
    assert refused.status_code == 409
    message = refused.json()["message"]
    assert f"Mirror topic orders.c is being verified already: verification {busy.pk}" in message
    assert "None of the 4 mirror topics asked for was started" in message
    assert list(Verification.objects.values_list("pk", flat=True)) == [busy.pk]
    event = AuditEvent.objects.filter(action="mirror.verify", result="refused").get()
    assert event.target == "mirror orders.c"

    # A mirror that does not follow its source refuses the lot as well.
    Verification.objects.all().delete()
    MirrorTopic.objects.filter(mirror_topic="orders.d").update(state=State.STOPPED)
    refused = api_verify(client, link, {"mirror_topic_name_pattern": "orders\\..*"})
    assert refused.status_code == 409 and "orders.d is STOPPED" in refused.json()["message"]
    assert not Verification.objects.exists()

    MirrorTopic.objects.filter(mirror_topic="orders.d").update(state=State.PAUSED)
    started = api_verify(client, link, {"mirror_topic_name_pattern": "orders\\..*"})
    assert started.status_code == 202
    assert [v["mirror_topic_name"] for v in started.json()["data"]] == [
        "orders.a",
        "orders.b",
        "orders.c",
        "orders.d",
    ]
    assert Verification.objects.filter(state=Verification.State.RUNNING).count() == 4


@pytest.mark.django_db
def test_an_unknown_name_among_several_starts_none(client_as, link, handed_over):
    mirror(link, "orders")
    response = api_verify(client_as("operator"), link, {"mirror_topic_names": ["orders", "nope"]})
    assert response.status_code == 404
    assert not Verification.objects.exists()
