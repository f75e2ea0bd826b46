"""A link's schema sync (`schema.sync.enable=true`), on the real clusters and registries: the
subjects of the link's mirrors reach the destination's registry under the same ids, each
subject's state is kept and shown on the link page, and what stops the sync (a cluster without
a registry) is said there until a run works."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from devstack import kafka, registry
from infra.schema_registry import SchemaRegistry, SchemaVersion
from replication.actions import approvals, request_runs
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import AuditEvent, ClusterLink, KafkaCluster, SchemaSubjectSync
from replication.sync import syncers
from replication.topics.mirrors import create_mirror
from tests.registries import DESTINATION, SOURCE, optional_ints, unique_name

pytestmark = pytest.mark.integration

ACTOR = audit.Actor.system("tests")


def avro(topic: str, *fields: str) -> str:
    return optional_ints(topic, "V", *fields)


def sync_now(link: ClusterLink) -> ClusterLink:
    """One run of the link's syncers, as the beat would (every interval due)."""
    ClusterLink.objects.filter(pk=link.pk).update(schemas_synced_at=None)
    link.refresh_from_db()
    syncers.sync_link(link, timezone.now() + timedelta(hours=1))
    link.refresh_from_db()
    return link


def test_the_mirrors_subjects_reach_the_destination_under_the_same_ids_and_show_on_the_page(
    make_link, make_topic, topic_name, client_as
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    other = make_topic(kafka.SOURCE, f"{topic_name}-unmirrored", 1)
    for subject in (f"{topic}-value", f"{topic}-key", f"{other}-value"):
        SOURCE.register(SchemaVersion(subject, 0, 0, avro(subject, "a")), keep_id=False)
    second = SchemaVersion(f"{topic}-value", 0, 0, avro(f"{topic}-value", "a", "b"))
    SOURCE.register(second, keep_id=False)
    link = make_link({"schema.sync.enable": "true"})
    create_mirror(ACTOR, link, topic)

    link = sync_now(link)

    assert link.sync_problems == {}
    rows = {s.subject: s for s in SchemaSubjectSync.objects.filter(link=link)}
    assert set(rows) == {f"{topic}-key", f"{topic}-value"}  # the mirror's, not the other topic's
    assert rows[f"{topic}-value"].state == "IN_STEP" and rows[f"{topic}-value"].versions == [1, 2]
    for subject, versions in ((f"{topic}-value", [1, 2]), (f"{topic}-key", [1])):
        for number in versions:
            assert DESTINATION.version(subject, number) == SOURCE.version(subject, number)
    assert f"{other}-value" not in DESTINATION.subjects()
    event = AuditEvent.objects.get(action="link.schema_sync")
    assert event.after[f"{topic}-value"]["registered"] == [1, 2]

    page = client_as("viewer").get(reverse("link-detail", args=["destination", link.name]))
    shown = page.content.decode()
    assert f'data-subject="{topic}-value"' in shown and 'data-state="IN_STEP"' in shown
    assert '<td class="compatibility">BACKWARD</td>' in shown  # the source registry's own
    assert "On, every 30000 ms" in shown


def test_a_destination_without_a_registry_or_one_not_answering_is_said_until_a_run_works(
    make_link, make_topic, topic_name, client_as
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    SOURCE.register(SchemaVersion(f"{topic}-value", 0, 0, avro(topic, "a")), keep_id=False)
    link = make_link({"schema.sync.enable": "true"})
    create_mirror(ACTOR, link, topic)
    KafkaCluster.objects.filter(name="destination").update(schema_registry_url="")

    link = sync_now(link)

    said = link.sync_problems[syncers.SCHEMAS]
    assert said == (
        "Cluster destination has no schema registry: set one on its page to sync schemas into it."
    )
    page = client_as("viewer").get(reverse("link-detail", args=["destination", link.name]))
    assert "Schemas are not syncing" in page.content.decode()

    # A registry that does not answer stops the run at once, rather than each subject waiting.
    KafkaCluster.objects.filter(name="destination").update(schema_registry_url="http://127.0.0.1:1")
    link = sync_now(link)
    assert "http://127.0.0.1:1: it cannot be reached" in link.sync_problems[syncers.SCHEMAS]
    assert not SchemaSubjectSync.objects.filter(link=link).exists()

    KafkaCluster.objects.filter(name="destination").update(
        schema_registry_url=registry.DESTINATION.url
    )
    link = sync_now(link)
    assert syncers.SCHEMAS not in link.sync_problems
    assert DESTINATION.versions(f"{topic}-value") == [1]


def test_subject_filters_and_a_context_choose_what_is_synced_and_where(
    make_link, make_topic, topic_name
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    group, context = unique_name(), unique_name()
    wanted = [f"{topic}-value", f"{group}.a-value", f"{group}.b-key"]
    for subject in [*wanted, f"{topic}-key", f"{group}-c-value"]:
        SOURCE.register(SchemaVersion(subject, 0, 0, avro(subject, "a")), keep_id=False)
    link = make_link(
        {
            "schema.sync.enable": "true",
            "schema.subjects": f"{topic}-value,{group}.*",
            "schema.context": context,
        }
    )

    link = sync_now(link)

    assert link.sync_problems == {}
    in_context = SchemaRegistry(f"{registry.DESTINATION.url}/contexts/.{context}")
    assert in_context.subjects() == sorted(wanted)  # the filters', whether mirrored or not
    for subject in wanted:
        assert in_context.version(subject, 1) == SOURCE.version(subject, 1)
        assert in_context.mode(subject) == "IMPORT"
        assert subject not in DESTINATION.subjects()  # the default context is left alone
    assert {s.subject for s in SchemaSubjectSync.objects.filter(link=link)} == set(wanted)


def test_the_api_shows_each_subjects_state_and_asks_for_a_sync_which_a_link_without_refuses(
    make_link, make_topic, topic_name, client_as
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    SOURCE.register(SchemaVersion(f"{topic}-value", 0, 0, avro(topic, "a")), keep_id=False)
    SOURCE.set_compatibility("FULL", f"{topic}-value")
    link = make_link({"schema.sync.enable": "true", "schema.subjects": f"{topic}-*"})
    link = sync_now(link)
    path = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/schemas"

    found = client_as("viewer").get(path).json()

    assert (found["kind"], found["enabled"], found["subject_filters"]) == (
        "SchemaSyncData",
        True,
        f"{topic}-*",
    )
    assert [
        (s["subject"], s["state"], s["versions"], s["compatibility"]) for s in found["subjects"]
    ] == [(f"{topic}-value", "IN_STEP", [1], "FULL")]
    assert DESTINATION.compatibility(f"{topic}-value") == "FULL"
    operator = client_as("operator")
    asked = operator.post(f"{path}:sync", content_type="application/json")
    assert asked.status_code == 202 and asked.json()["synced_at"] is None
    assert AuditEvent.objects.filter(action="link.schema_sync_requested", result="ok").exists()

    plain = make_link(name=f"{link.name}-plain")
    refused = operator.post(
        f"/kafka/v3/clusters/{plain.destination.cluster_id}/links/{plain.name}/schemas:sync",
        content_type="application/json",
    )
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        f"Link {plain.name} does not sync schemas: set schema.sync.enable=true on it first."
    )
    assert AuditEvent.objects.filter(action="link.schema_sync_requested", result="refused").exists()


def test_synced_subjects_are_made_writable_on_the_destination_once_approved(
    make_link, make_topic, topic_name, users
):
    topic = make_topic(kafka.SOURCE, topic_name, 1)
    common, value = f"{topic}-common", f"{topic}-value"
    for subject in (common, value):
        SOURCE.register(SchemaVersion(subject, 0, 0, avro(subject, "a")), keep_id=False)
    context = unique_name()
    there = SchemaRegistry(f"{registry.DESTINATION.url}/contexts/.{context}")
    link = make_link(
        {"schema.sync.enable": "true", "schema.subjects": f"{topic}-*", "schema.context": context}
    )
    link = sync_now(link)
    assert there.mode(common) == there.mode(value) == "IMPORT"
    operator = audit.Actor(user=users["operator"], name="operator")

    with pytest.raises(
        ReplicationError, match=rf"does not sync {topic}-nope .*Nothing was changed"
    ):
        approvals.submit(
            operator, link, "promote-subjects", params={"subjects": [common, f"{topic}-nope"]}
        )
    asked = approvals.submit(
        operator, link, "promote-subjects", reason="producers moved", params={"subjects": [common]}
    ).request
    assert (asked.state, asked.params) == ("PENDING", {"subjects": [common]})
    assert there.mode(common) == "IMPORT"  # nothing yet: it waits for an approver

    approvals.approve(audit.Actor(user=users["approver"], name="approver"), asked)
    request_runs.execute(approvals.get_request(asked.pk))

    assert approvals.get_request(asked.pk).state == "EXECUTED"
    assert there.mode(common) == "READWRITE"
    assert there.mode(value) == "IMPORT"  # only what was named
    rows = {r.subject: r.state for r in SchemaSubjectSync.objects.filter(link=link)}
    assert rows == {common: "PROMOTED", value: "IN_STEP"}
    there.register(SchemaVersion(common, 0, 0, avro(common, "a", "b")), keep_id=False)
    link = sync_now(link)  # the next run leaves it alone
    assert there.versions(common) == [1, 2] and there.mode(common) == "READWRITE"
