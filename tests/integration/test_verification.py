"""Each mirror compared with its source, record by record: a record a super user writes into a
mirror (past its read-only rule) is found by the background verification and by a verification
asked for with `kafka-mirrors --verify` and the API, and shown on the mirror's page, on the
overview, in /metrics, in the CLI and in the audit trail; an untouched mirror with translated
offsets verifies identical."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Producer
from django.urls import reverse

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.engine import supervise
from replication.models import AuditEvent, MirrorTopic, Verification
from replication.observe import mirror_differences, verification_sweep
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.integration.test_cli import ok
from tests.kafka_clients import write_numbered, write_transactions
from tests.mirror_checks import ACTOR, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _ends(topic: str) -> dict[int, int]:
    return KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, 2)


def _copy_until(link, topic: str, ends: dict[int, int]) -> None:
    def there() -> bool:
        supervise.supervise(link)
        return _ends(topic) == ends

    assert wait_for(there, 120, 0.5), _ends(topic)


def test_a_record_a_super_user_writes_into_a_mirror_is_found_and_shown_everywhere(
    make_link, make_topic, topic_name, client_as, api, typed, verification_worker
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    source = {"bootstrap.servers": kafka.SOURCE.bootstrap}
    write_numbered(source, topic_name, 0, 100)  # 50 a partition
    link = make_link()
    mirror = create_mirror(ACTOR, link, topic_name)
    run_until_copied(link, [mirror])

    verification_sweep.sweep(mirror)  # as the beat does every 30 s
    mirror.refresh_from_db()
    assert verification_sweep.verified(mirror) == {0: (0, 50), 1: (0, 50)}
    assert mirror.differing_records == 0
    assert "Identical to its source up to offset 50 in every partition" in (
        verification_sweep.summary(mirror)
    )

    # A super user writes past the read-only rule; the copy goes on one offset later.
    writer = Producer(admin_config(kafka.DESTINATION))
    writer.produce(topic_name, value=b"not from the source", partition=0)
    assert writer.flush(30) == 0
    write_numbered(source, topic_name, 100, 20)  # 10 more a partition
    _copy_until(link, topic_name, {0: 61, 1: 60})

    verification_sweep.sweep(mirror)
    mirror.refresh_from_db()
    extra = "partition 0: the mirror holds 1 record its source does not have, at mirror offset 50"
    moved = "partition 0: source offsets 50 to 59 at mirror offsets 51 to 60"
    said = mirror_differences.differences(mirror)
    assert [s.split(" (")[0] for s in said[:1]] == [extra] and said[1].startswith(moved)
    assert mirror.differing_records == 11
    assert verification_sweep.verified(mirror)[1] == (0, 60)  # the other partition is fine

    page = client_as("viewer").get(reverse("mirror-detail", args=["destination", topic_name]))
    html = page.content.decode()
    assert 'id="differences"' in html and extra in html and moved in html
    assert "Differs from its source: 11 records" in html
    overview = client_as("viewer").get(reverse("dashboard")).content.decode()
    assert '<span class="stat-value" id="stat-troubled">1</span>' in overview
    assert "11 records differ from the source" in overview
    metrics = client_as("viewer").get("/metrics").content.decode()
    ids = f'link="{link.name}",destination="destination",mirror="{topic_name}"'
    assert f"isthmus_mirror_differing_records{{{ids}}} 11" in metrics
    assert f'isthmus_mirror_partition_verified_offset{{{ids},partition="1"}} 60' in metrics
    event = AuditEvent.objects.get(action="mirror.differs")
    assert event.actor_name == "system (verification)" and extra in event.message

    # Found again on demand, over the whole range, by Kafka-style tooling.
    result = typed(
        f"kafka-mirrors --bootstrap-server localhost:{kafka.DESTINATION.plaintext_port} "
        f"--verify --topics {topic_name}"
    )
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert any(
        re.fullmatch(rf"Verifying {topic_name}: \d+ of 120 offsets compared", x) for x in lines
    )
    assert f"Topic: {topic_name}  State: DIFFERENT" in result.stdout
    assert f"    Differs: {extra}" in result.stdout
    described = ok(
        typed(
            f"kafka-mirrors --bootstrap-server localhost:{kafka.DESTINATION.plaintext_port} "
            f"--describe --include-verification --topics {topic_name}"
        )
    )
    assert any(line.startswith("    Differs: " + extra) for line in described)

    found = Verification.objects.get(mirror=mirror)
    path = (
        f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/mirrors/"
        f"{topic_name}/verifications/{found.pk}"
    )
    answer = api("viewer").get(path).json()
    assert (answer["state"], answer["total"], answer["compared"]) == ("DIFFERENT", 120, 120)
    assert answer["identical_records"] == 110 and answer["differing_records"] == 11
    assert answer["differences"][0].startswith(extra)
    shown = client_as("viewer").get(
        reverse("mirror-verification", args=["destination", topic_name, found.pk])
    )
    assert "DIFFERENT" in shown.content.decode() and extra in shown.content.decode()


def test_an_untouched_mirror_with_translated_offsets_verifies_identical_through_the_api(
    make_link, make_topic, topic_name, api, client_as, verification_worker
):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    write_transactions(kafka.SOURCE.bootstrap, topic_name)  # markers and aborted records
    link = make_link()
    mirror = create_mirror(ACTOR, link, topic_name)
    run_until_copied(link, [mirror])

    base = f"/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}/mirrors"
    refused = api("viewer").post(
        f"{base}:verify", {"mirror_topic_names": [topic_name]}, content_type="application/json"
    )
    assert refused.status_code == 403
    bad = api("operator").post(
        f"{base}:verify",
        {"mirror_topic_names": [topic_name], "from_offset": 10, "to_offset": 5},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "must be after its start" in bad.json()["message"]
    started = api("operator").post(
        f"{base}:verify", {"mirror_topic_names": [topic_name]}, content_type="application/json"
    )
    assert started.status_code == 202, started.content
    (one,) = started.json()["data"]
    path = f"{base}/{topic_name}/verifications/{one['verification_id']}"

    def finished() -> dict | None:
        answer = api("viewer").get(path).json()
        return answer if answer["state"] != "RUNNING" else None

    assert wait_for(finished, 60, 0.5)
    answer = finished()
    assert answer["state"] == "IDENTICAL", answer
    assert answer["identical_records"] == 80  # 40 committed a partition, at translated offsets
    assert [(p["first_offset"], p["compared_upto"]) for p in answer["partitions"]] == [
        (0, 65),
        (0, 65),
    ]
    listed = api("viewer").get(f"{base}/{topic_name}/verifications").json()["data"]
    assert [v["verification_id"] for v in listed] == [one["verification_id"]]
    audited = AuditEvent.objects.filter(action="mirror.verify")
    assert sorted(audited.values_list("result", flat=True)) == ["ok", "refused"]

    # The background rounds agree, and the page says so.
    verification_sweep.sweep(mirror)
    mirror = MirrorTopic.objects.get(pk=mirror.pk)
    assert mirror.differing_records == 0
    assert verification_sweep.verified(mirror) == {0: (0, 65), 1: (0, 65)}
    html = (
        client_as("viewer")
        .get(reverse("mirror-detail", args=["destination", topic_name]))
        .content.decode()
    )
    assert 'id="verified"' in html and "Identical to its source up to offset 65" in html
    assert time.time() - mirror.verification["at"] < 60
