"""Consumer offset sync on the real clusters: a group that read part of a source topic resumes
on the mirror exactly where it stopped (no record skipped, none read twice), for identical and
for translated offsets; a group running on the destination is never overwritten; the filters
select exactly the groups they name; offsets never point past what the mirror holds.

One link and one stream copy every topic here; each test uses groups of its own, and syncs by
calling the syncer, to control the moment it runs.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import NewTopic
from django.urls import reverse
from django.utils import timezone

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_admin import KafkaAdmin
from infra.processes import wait_for
from replication.cutover import promote
from replication.governance.tokens import create_token
from replication.models import ClusterLink, GroupOffsetSync, MirrorTopic
from replication.overview import metrics
from replication.sync import syncers
from replication.topics import offset_sync
from replication.topics.links import alter_link_configs
from replication.topics.mirrors import create_mirror
from tests import leftovers
from tests.conftest import admin_config
from tests.integration.test_mirror_engine import CASES as ENGINE_CASES
from tests.integration.test_mirror_engine import _produce
from tests.kafka_clients import commit_offsets, patient_admins
from tests.mirror_checks import ACTOR, committed_link, eventually, read_all, run_until_copied

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

RECENT = int(time.time() * 1000) - 600_000
BASE = leftovers.unique_name("osync")  # every group of this module starts with it
OUTSIDE = "osync-outside"  # but those named so as not to be selected


def _plain(topic: str) -> None:
    source = KafkaAdmin(admin_config(kafka.SOURCE))
    n = wait_for(lambda: source.describe_topic(topic).partitions, 30)  # (a topic just made)
    assert n, f"{topic} not seen on the source"
    _produce(
        topic,
        [
            dict(
                key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % n, timestamp=RECENT + i
            )
            for i in range(300)
        ],
    )


CASES = {
    "plain": (3, {}, _plain),
    "compacted": ENGINE_CASES["compacted"],
    "transactional": ENGINE_CASES["transactional"],
}


def _groups(*filters: tuple[str, str, str]) -> str:
    return json.dumps(
        {"groupFilters": [{"name": n, "patternType": p, "filterType": f} for n, p, f in filters]}
    )


@pytest.fixture(scope="module")
def copied(devstack, django_db_setup, django_db_blocker):
    admin = AdminClient(admin_config(kafka.SOURCE))
    names = {case: leftovers.unique_name(f"osync-{case}") for case in [*CASES, "promoted"]}
    for case, (partitions, config, fill) in {**CASES, "promoted": (2, {}, _plain)}.items():
        admin.create_topics([NewTopic(names[case], partitions, 1, config=config)])[
            names[case]
        ].result(30)
        fill(names[case])
    configs = {
        "consumer.offset.sync.enable": "true",
        "consumer.offset.group.filters": _groups((f"{BASE}-", "PREFIXED", "INCLUDE")),
    }
    with (
        committed_link(django_db_blocker, list(names.values()), configs) as link,
        django_db_blocker.unblock(),
    ):
        mirrors = {case: create_mirror(ACTOR, link, names[case]) for case in names}
        run_until_copied(link, list(mirrors.values()))
        yield SimpleNamespace(link=link, mirrors=mirrors, names=names)
    for node in kafka.NODES:
        leftovers.delete_groups(node, leftovers.groups(node, lambda g: BASE in g or OUTSIDE in g))


def _sync(link: ClusterLink) -> offset_sync.Outcome:
    link.refresh_from_db()
    return offset_sync.sync_offsets(link, timezone.now(), *patient_admins(link))


def _resume(group: str, topic: str) -> list[tuple[int, bytes, bytes]]:
    """What a consumer of `group` reads of the mirror `topic`, from its committed offsets (no
    reset allowed: a partition without one is an error), until the end of every partition."""
    consumer = Consumer(
        {
            **admin_config(kafka.DESTINATION),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    partitions = KafkaAdmin(admin_config(kafka.DESTINATION)).describe_topic(topic).partitions
    pending, read = set(range(partitions)), []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error().str()
                pending.discard(msg.partition())
                continue
            read.append((msg.partition(), msg.key(), msg.value()))
        assert not pending, f"reading {topic} did not reach the end of {pending}"
    finally:
        consumer.close()
    return read


@pytest.mark.parametrize("case", list(CASES))
def test_a_group_resumes_on_the_mirror_exactly_where_it_stopped_on_the_source(copied, case):
    topic = copied.names[case]
    source = read_all(kafka.SOURCE.bootstrap, topic)
    ends = KafkaAdmin(admin_config(kafka.SOURCE)).end_offsets(topic, CASES[case][0])
    # Partition 0 read halfway (just past a record: for the transactional topic that is a
    # commit marker's offset), partition 1 read to the end, partition 2 not yet read.
    half = [r for r in source if r.partition == 0]
    cuts = {0: half[len(half) // 2].offset + 1, 1: ends.get(1), 2: 0}
    cuts = {p: cuts[p] for p in ends}
    group = f"{BASE}-resume-{case}"
    commit_offsets(kafka.SOURCE, group, {(topic, p): offset for p, offset in cuts.items()})

    outcome = _sync(copied.link)

    assert outcome.groups[group] == GroupOffsetSync.State.IN_STEP
    expected = [(r.partition, r.key, r.value) for r in source if r.offset >= cuts[r.partition]]
    resumed = _resume(group, topic)
    assert sorted(resumed, key=lambda r: r[0]) == expected  # in order per partition
    assert len(expected) < len(source)
    if case != "plain":  # offsets differ there, so the group's were translated
        held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group])[group]
        assert held[topic, 0] != cuts[0]


def test_offsets_the_destination_holds_are_not_written_again_and_quiet_ones_sync_too(copied):
    topic = copied.names["plain"]
    group = f"{BASE}-unchanged"
    commit_offsets(kafka.SOURCE, group, {(topic, 0): 10, (topic, 1): 20})
    first = _sync(copied.link)
    assert group in first.written
    row = GroupOffsetSync.objects.get(link=copied.link, group=group)
    written_at = row.written_at

    again = _sync(copied.link)
    assert again.groups[group] == GroupOffsetSync.State.IN_STEP
    row.refresh_from_db()
    assert row.written_at == written_at, "unchanged offsets were written again"

    # No record arrives on the topic; only the group moves, on one partition.
    commit_offsets(kafka.SOURCE, group, {(topic, 1): 25})
    _sync(copied.link)
    held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group])[group]
    assert held == {(topic, 0): 10, (topic, 1): 25}
    row.refresh_from_db()
    assert row.offsets == {f"{topic}/0": 10, f"{topic}/1": 25} and row.written_at > written_at


def test_a_group_with_members_on_the_destination_is_skipped_and_not_overwritten(copied):
    topic = copied.names["plain"]
    group = f"{BASE}-busy"
    commit_offsets(kafka.DESTINATION, group, {(topic, 0): 3})
    member = Consumer(
        {**admin_config(kafka.DESTINATION), "group.id": group, "enable.auto.commit": False}
    )
    try:
        member.subscribe([topic])

        def joined() -> list:
            member.poll(0.5)
            return member.assignment()

        eventually(joined, 30, "the destination consumer joining its group")
        commit_offsets(kafka.SOURCE, group, {(topic, 0): 40})

        outcome = _sync(copied.link)

        assert outcome.groups[group] == GroupOffsetSync.State.SKIPPED
        row = GroupOffsetSync.objects.get(link=copied.link, group=group)
        assert "active member" in row.reason and "not overwritten" in row.reason
        held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group])[group]
        assert held[topic, 0] == 3
    finally:
        member.close()
    # Once its consumers stopped, the next run writes it.
    assert _sync(copied.link).groups[group] == GroupOffsetSync.State.IN_STEP
    held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group])[group]
    assert held[topic, 0] == 40


def test_the_filters_select_exactly_the_groups_they_name(copied):
    topic = copied.names["plain"]
    groups = [f"{BASE}-app-1", f"{BASE}-app-test", f"{BASE}-tmp-1"]
    outside = leftovers.unique_name(OUTSIDE)
    for group in [*groups, outside]:
        commit_offsets(kafka.SOURCE, group, {(topic, 0): 5})
    alter_link_configs(
        ACTOR,
        copied.link,
        {
            "consumer.offset.group.filters": _groups(
                (f"{BASE}-", "PREFIXED", "INCLUDE"),
                (f"{BASE}-app-test", "LITERAL", "EXCLUDE"),
                (f"{BASE}-tmp-", "PREFIXED", "EXCLUDE"),
            )
        },
        [],
    )
    try:
        outcome = _sync(copied.link)
    finally:
        alter_link_configs(
            ACTOR,
            copied.link,
            {"consumer.offset.group.filters": _groups((f"{BASE}-", "PREFIXED", "INCLUDE"))},
            [],
        )
    assert f"{BASE}-app-1" in outcome.groups
    assert not {f"{BASE}-app-test", f"{BASE}-tmp-1", outside} & set(outcome.groups)
    held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([*groups, outside])
    assert held[f"{BASE}-app-1"] == {(topic, 0): 5}
    assert held[f"{BASE}-app-test"] == held[f"{BASE}-tmp-1"] == held[outside] == {}


def test_a_group_ahead_of_the_copy_gets_the_mirrors_end_and_shows_it(copied):
    topic = copied.names["plain"]
    end = KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, 3)[0]
    group = f"{BASE}-ahead"
    commit_offsets(kafka.SOURCE, group, {(topic, 0): end + 50})

    outcome = _sync(copied.link)

    assert outcome.groups[group] == GroupOffsetSync.State.BEHIND_MIRROR
    assert KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group])[group] == {
        (topic, 0): end
    }
    row = GroupOffsetSync.objects.get(link=copied.link, group=group)
    assert f"{topic}/0" in row.reason


def test_the_mirror_page_shows_each_groups_state_and_why(copied, client_as):
    topic = copied.names["plain"]
    group = f"{BASE}-page"
    end = KafkaAdmin(admin_config(kafka.DESTINATION)).end_offsets(topic, 3)[1]
    commit_offsets(kafka.SOURCE, group, {(topic, 0): 1, (topic, 1): end + 5})
    _sync(copied.link)

    url = reverse("mirror-detail", args=[copied.link.destination.name, topic])
    page = client_as("viewer").get(url).content.decode()

    row = page[page.index(f'data-group="{group}"') :].split("</tr>")[0]
    assert "behind the mirror" in row and f"{topic}/1" in row and " UTC" in row
    resumed = page[page.index(f'data-group="{BASE}-resume-plain"') :].split("</tr>")[0]
    assert "in step" in resumed
    other = copied.names["compacted"]
    assert (
        f'data-group="{BASE}-resume-plain"'
        not in client_as("viewer")
        .get(reverse("mirror-detail", args=[copied.link.destination.name, other]))
        .content.decode()
    )


def test_the_link_page_shows_the_groups_and_what_stops_a_sync(copied, client_as):
    link = copied.link
    _sync(link)
    problems = {syncers.ACLS: "the source runs no authorizer", syncers.AUTO_CREATE: "no filter"}
    ClusterLink.objects.filter(pk=link.pk).update(
        sync_problems=problems, declined_topics=["deleted-by-hand"]
    )
    try:
        url = reverse("link-detail", args=[link.destination.name, link.name])
        page = client_as("viewer").get(url).content.decode()
    finally:
        ClusterLink.objects.filter(pk=link.pk).update(sync_problems={}, declined_topics=[])

    row = page[page.index(f'data-group="{BASE}-resume-plain"') :].split("</tr>")[0]
    assert "in step" in row
    assert "<strong>ACLs are not syncing</strong>: the source runs no authorizer" in page
    assert "<strong>Mirrors are not being created</strong>: no filter" in page
    assert "<code>deleted-by-hand</code>" in page
    assert "Off. Set <code>acl.sync.enable=true</code>" in page


def test_metrics_count_the_groups_by_sync_state(copied, client, users):
    ClusterLink.objects.filter(pk=copied.link.pk).update(offsets_synced_at=None)
    copied.link.refresh_from_db()
    syncers.sync_link(copied.link, timezone.now())  # as the beat does
    _, secret = create_token(ACTOR, users["viewer"], "prometheus")

    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {secret}").content.decode()

    ids = f'link="{copied.link.name}",destination="{copied.link.destination.name}"'
    counted = {
        state: GroupOffsetSync.objects.filter(link=copied.link, state=state).count()
        for state in GroupOffsetSync.State.values
    }
    for state, n in counted.items():
        if n:
            assert f'isthmus_link_offset_sync_groups{{{ids},state="{state}"}} {n}' in text
    assert counted[GroupOffsetSync.State.IN_STEP] >= 1
    assert f"isthmus_link_offset_sync_age_seconds{{{ids}}} " in text


def test_an_enabled_sync_without_filters_says_so_on_the_link(copied, client_as):
    link = copied.link
    alter_link_configs(ACTOR, link, {}, ["consumer.offset.group.filters"])
    try:
        ClusterLink.objects.filter(pk=link.pk).update(offsets_synced_at=None)
        link.refresh_from_db()
        syncers.sync_link(link, timezone.now())
        link.refresh_from_db()
        assert "includes no group" in link.sync_problems[syncers.OFFSETS]
        page = client_as("viewer").get(
            reverse("link-detail", args=[link.destination.name, link.name])
        )
        assert "<strong>Offsets are not syncing</strong>: consumer.offset.sync.enable is true" in (
            page.content.decode()
        )
        assert f'isthmus_link_sync_problem{{link="{link.name}",' in metrics.prometheus_text()
    finally:
        alter_link_configs(
            ACTOR,
            link,
            {"consumer.offset.group.filters": _groups((f"{BASE}-", "PREFIXED", "INCLUDE"))},
            [],
        )
    ClusterLink.objects.filter(pk=link.pk).update(offsets_synced_at=None)
    link.refresh_from_db()
    syncers.sync_link(link, timezone.now())
    link.refresh_from_db()
    assert syncers.OFFSETS not in link.sync_problems


def test_a_promote_syncs_the_groups_offsets_a_last_time_and_then_no_more(copied):
    topic = copied.names["promoted"]
    group = f"{BASE}-promoted"
    commit_offsets(kafka.SOURCE, group, {(topic, 0): 30, (topic, 1): 12})  # after the last sync

    [outcome] = promote.stop_mirrors(ACTOR, copied.link, [topic], promote.PROMOTE, wait=True)

    assert not outcome.error
    mirror = MirrorTopic.objects.get(pk=copied.mirrors["promoted"].pk)
    assert mirror.state == MirrorTopic.State.STOPPED
    assert mirror.stop_report["consumer_offsets"].startswith("synced a last time: 1 group(s)")
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    assert destination.group_offsets([group])[group] == {(topic, 0): 30, (topic, 1): 12}
    # The topic is the destination's own now: its groups' offsets are theirs.
    commit_offsets(kafka.SOURCE, group, {(topic, 0): 40})
    _sync(copied.link)
    assert destination.group_offsets([group])[group][topic, 0] == 30


def test_a_prefixed_link_can_give_the_synced_groups_its_prefix(make_link, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    link = make_link(
        {
            "cluster.link.prefix": "west.",
            "consumer.group.prefix.enable": "true",
            "consumer.offset.sync.enable": "true",
            "consumer.offset.group.filters": _groups((f"{BASE}-", "PREFIXED", "INCLUDE")),
        }
    )
    mirror = create_mirror(ACTOR, link, topic_name)
    assert mirror.mirror_topic == f"west.{topic_name}"
    group = f"{BASE}-prefixed"
    commit_offsets(
        kafka.SOURCE, group, {(topic_name, 0): 0, (topic_name, 1): 0}
    )  # nothing read yet

    outcome = _sync(link)

    assert outcome.groups[group] == GroupOffsetSync.State.IN_STEP
    held = KafkaAdmin(admin_config(kafka.DESTINATION)).group_offsets([group, f"west.{group}"])
    assert held[f"west.{group}"] == {(mirror.mirror_topic, 0): 0, (mirror.mirror_topic, 1): 0}
    assert held[group] == {}
    assert GroupOffsetSync.objects.get(link=link, group=group).destination_group == f"west.{group}"


@pytest.mark.serial
def test_offsets_sync_again_by_themselves_after_the_source_broker_was_restarted(copied, stack):
    link, topic = copied.link, copied.names["plain"]
    group = f"{BASE}-restart"
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))

    def sync_due() -> ClusterLink:
        ClusterLink.objects.filter(pk=link.pk).update(offsets_synced_at=None)
        link.refresh_from_db()
        syncers.sync_link(link, timezone.now())  # as the beat does
        link.refresh_from_db()
        return link

    commit_offsets(kafka.SOURCE, group, {(topic, 0): 7})
    sync_due()
    assert destination.group_offsets([group])[group] == {(topic, 0): 7}

    stack.down(["source"], echo=lambda _: None)
    try:
        problem = sync_due().sync_problems[syncers.OFFSETS]
        assert problem.startswith(f"Could not list the consumer groups at {kafka.SOURCE.bootstrap}")
        assert "Check that the brokers are running" in problem and "KafkaError{" not in problem
    finally:
        stack.up(["source"], echo=lambda _: None)
    eventually(lambda: _trycommit_offsets(group, {(topic, 0): 9}), 60, "a commit on the source")

    eventually(
        lambda: sync_due() and destination.group_offsets([group])[group] == {(topic, 0): 9},
        60,
        "the offsets syncing again",
    )
    assert syncers.OFFSETS not in link.sync_problems


def _trycommit_offsets(group: str, positions: dict[tuple[str, int], int]) -> bool:
    try:
        commit_offsets(kafka.SOURCE, group, positions)
    except KafkaException:
        return False
    return True
