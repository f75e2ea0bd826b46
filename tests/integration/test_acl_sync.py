"""ACL sync on the real clusters (both run Kafka's StandardAuthorizer): the source ACLs a
link's acl.filters select are kept equal on the destination (added, changed, removed), no
destination ACL outside the filters is touched, and a mirror topic stays read-only whatever
is synced onto it.

Every topic and principal name carries the session marker; a test removes every ACL of its
names and principals on both clusters afterwards (`acls` fixture), and the session's sweep
removes what a killed test leaves on topic names. The syncer is called directly, to control
the moment it runs, but for the schedule test, which goes through `syncers.sync_link`.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    NewPartitions,
    ResourcePatternType,
    ResourceType,
)
from django.utils import timezone

from devstack import kafka
from infra.admin_client import AdminClient
from infra.kafka_acls import EVERY_ACL, exact_filter
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from replication.core import filters, read_only
from replication.core.errors import ReplicationError
from replication.models import AuditEvent, ClusterLink
from replication.sync import acl_sync, syncers
from replication.topics.link_creation import create_link
from replication.topics.links import alter_link_configs
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import READ_ONLY_ACLS, acls_on, patient_admins, produce
from tests.leftovers import MARK, unique_name
from tests.mirror_checks import ACTOR, eventually

pytestmark = pytest.mark.integration

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
ANONYMOUS = "User:ANONYMOUS"  # every client of the PLAINTEXT listeners: the one non-super user


def acl(
    name: str,
    principal: str,
    operation: str,
    permission: str = "ALLOW",
    *,
    restype: ResourceType = TOPIC,
    pattern: ResourcePatternType = LITERAL,
) -> AclBinding:
    return AclBinding(
        restype,
        name,
        pattern,
        principal,
        "*",
        AclOperation[operation],
        AclPermissionType[permission],
    )


def acl_filters(*entries: dict) -> str:
    return json.dumps({"aclFilters": list(entries)})


def entry(
    resource_type: str = "topic",
    name: str | None = None,
    pattern: str = "literal",
    principal: str | None = None,
    operation: str = "any",
    permission: str = "any",
) -> dict:
    resource = {"resourceType": resource_type, "patternType": pattern}
    if name is not None:
        resource["name"] = name
    access = {"operation": operation, "permissionType": permission}
    if principal is not None:
        access["principal"] = principal
    return {"resourceFilter": resource, "accessFilter": access}


def keys(*bindings: AclBinding) -> set[tuple]:
    return {filters.binding_key(b) for b in bindings}


class Acls:
    """ACLs a test makes on either cluster, waited for until the broker answers with them;
    every ACL on the test's names or of its (marked) principals goes afterwards."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.principals: set[str] = set()
        self.admins = {
            node.name: KafkaAdmin(admin_config(node), timeout=10) for node in kafka.NODES
        }

    def _note(self, bindings) -> None:
        for b in bindings:
            assert MARK in b.name, f"ACL on an unmarked name {b.name!r}"
            self.names.add(b.name)
            if MARK in b.principal:
                self.principals.add(b.principal)

    def create(self, node: kafka.KafkaNode, *bindings: AclBinding) -> None:
        self._note(bindings)
        self.admins[node.name].create_acls(list(bindings))
        eventually(lambda: keys(*bindings) <= self.mine(node), 30, f"ACLs on {node.name}")

    def delete(self, node: kafka.KafkaNode, *bindings: AclBinding) -> None:
        self.admins[node.name].delete_acls([exact_filter(b) for b in bindings])
        eventually(lambda: not keys(*bindings) & self.mine(node), 30, f"ACLs gone on {node.name}")

    def mine(self, node: kafka.KafkaNode) -> set[tuple]:
        """Every ACL on the test's names or of its principals, as binding keys."""
        return {
            filters.binding_key(b)
            for b in self.admins[node.name].describe_acls(EVERY_ACL)
            if b.name in self.names or b.principal in self.principals
        }

    def remove_all(self) -> None:
        """Every ACL of the test's, on both clusters; retried for a minute (another test run
        may be restarting a broker), as the sweep removes only those on topic names."""

        def removed(node: kafka.KafkaNode) -> bool:
            try:
                found = [
                    b
                    for b in self.admins[node.name].describe_acls(EVERY_ACL)
                    if b.name in self.names or b.principal in self.principals
                ]
                if found:
                    self.admins[node.name].delete_acls([exact_filter(b) for b in found])
            except KafkaAdminError:
                return False
            return not found

        for node in kafka.NODES:
            eventually(lambda node=node: removed(node), 60, f"the test's ACLs gone on {node.name}")


@pytest.fixture
def acls(devstack):
    made = Acls()
    yield made
    made.remove_all()


def sync(link: ClusterLink) -> acl_sync.Outcome:
    link.refresh_from_db()
    return acl_sync.sync_acls(link, *patient_admins(link))


def settle(acls: Acls, expected: set[tuple]) -> None:
    """The destination broker answers with exactly `expected` of the test's ACLs."""
    last = []

    def check():
        last[:] = [acls.mine(kafka.DESTINATION)]
        return last[0] == expected

    try:
        eventually(check, 60, "the destination's ACLs settling")
    except AssertionError:
        raise AssertionError(
            f"destination has {sorted(last[0])}, expected {sorted(expected)}"
        ) from None


def refused(reports: list) -> bool:
    return (
        len(reports) == 1
        and reports[0][0] is not None
        and reports[0][0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    )


# Added, changed, removed; the rest untouched. ---------------------------------------------


def test_added_changed_and_removed_source_acls_follow_and_unrelated_ones_survive(make_link, acls):
    topic, other = unique_name("acl-topic"), unique_name("acl-other")
    alice, bob = f"User:{unique_name('alice')}", f"User:{unique_name('bob')}"
    link = make_link({"acl.sync.enable": "true", "acl.filters": acl_filters(entry(name=topic))})

    # On the destination: ACLs the filter does not select (another topic; the same name, but
    # PREFIXED where the filter asks for LITERAL), and one it selects that the source lacks.
    unrelated = [acl(other, alice, "READ"), acl(topic, bob, "READ", pattern=PREFIXED)]
    stray = acl(topic, bob, "DESCRIBE", "DENY")
    acls.create(kafka.DESTINATION, *unrelated, stray)

    # Added on the source: it follows, and the stray one goes.
    reading = acl(topic, alice, "READ")
    acls.create(kafka.SOURCE, reading)
    outcome = sync(link)
    assert outcome.created == [acl_sync.describe(reading)]
    assert outcome.deleted == [acl_sync.describe(stray)]
    settle(acls, keys(reading, *unrelated))

    # In step: a second run changes nothing, and audits nothing.
    again = sync(link)
    assert (again.created, again.deleted, again.in_step) == ([], [], 1)

    # Changed on the source (READ becomes WRITE): the old one goes, the new one comes.
    writing = acl(topic, alice, "WRITE")
    acls.create(kafka.SOURCE, writing)
    acls.delete(kafka.SOURCE, reading)
    outcome = sync(link)
    assert (outcome.created, outcome.deleted) == (
        [acl_sync.describe(writing)],
        [acl_sync.describe(reading)],
    )
    settle(acls, keys(writing, *unrelated))

    # Removed on the source: removed on the destination.
    acls.delete(kafka.SOURCE, writing)
    outcome = sync(link)
    assert (outcome.created, outcome.deleted) == ([], [acl_sync.describe(writing)])
    settle(acls, keys(*unrelated))

    # Each run that changed something is audited, by the ACL syncer, with what it did.
    events = AuditEvent.objects.filter(action="link.acl_sync", target=f"link {link.name}")
    assert {(e.actor_name, e.result) for e in events} == {("system (ACL sync)", "ok")}
    said = acl_sync.describe
    assert [e.after for e in events.order_by("id")] == [
        {"created": [said(reading)], "deleted": [said(stray)]},
        {"created": [said(writing)], "deleted": [said(reading)]},
        {"created": [], "deleted": [said(writing)]},
    ]


def test_the_filters_select_exactly_the_acls_they_name(make_link, acls):
    prefix, literal, other, group = (
        unique_name(n) for n in ("acl-pfx", "acl-lit", "acl-any", "acl-group")
    )
    alice, bob, carol = (f"User:{unique_name(n)}" for n in ("alice", "bob", "carol"))
    link = make_link(
        {
            "acl.sync.enable": "true",
            "acl.filters": acl_filters(
                # Kafka's binding filter: a PREFIXED filter selects the PREFIXED ACL of that
                # exact name, not the literal topics it covers nor longer prefixes.
                entry(name=prefix, pattern="prefixed"),
                # Only bob's ALLOW READ on the literal topic.
                entry(name=literal, principal=bob, operation="read", permission="allow"),
                # Every ACL of carol's, whatever the resource.
                entry(resource_type="any", pattern="any", principal=carol),
            ),
        }
    )
    selected = [
        acl(prefix, alice, "READ", pattern=PREFIXED),
        acl(literal, bob, "READ"),
        acl(other, carol, "WRITE"),
        acl(group, carol, "READ", restype=GROUP),
    ]
    left_out = [
        acl(f"{prefix}-x", alice, "READ"),  # a topic the prefix covers, LITERAL
        acl(f"{prefix}-x", alice, "WRITE", pattern=PREFIXED),  # a longer prefix
        acl(prefix, alice, "READ"),  # the prefix's name itself, LITERAL
        acl(literal, bob, "WRITE"),  # another operation
        acl(literal, bob, "READ", "DENY"),  # another permission
        acl(literal, alice, "READ"),  # another principal
        acl(other, alice, "WRITE"),  # not carol's
    ]
    acls.create(kafka.SOURCE, *selected, *left_out)  # group ACLs too: removed by principal

    outcome = sync(link)
    assert sorted(outcome.created) == sorted(acl_sync.describe(b) for b in selected)
    assert (outcome.deleted, outcome.in_step) == ([], len(selected))
    settle(acls, keys(*selected))


# Mirror topics stay read-only. ------------------------------------------------------------


@pytest.fixture
def mirror_with_control(make_link, make_topic, topic_name, acls):
    """A mirror of `topic_name` and an ordinary destination topic (the control), both selected
    by the link's ACL filters."""
    control = make_topic(kafka.DESTINATION, unique_name("acl-control"))
    make_topic(kafka.SOURCE, topic_name)
    link = make_link(
        {
            "acl.sync.enable": "true",
            "acl.filters": acl_filters(entry(name=topic_name), entry(name=control)),
        }
    )
    # Made before the source topic gets ACLs: the link reads it as User:ANONYMOUS.
    mirror = create_mirror(ACTOR, link, topic_name)
    assert mirror.read_only_enforced
    eventually(lambda: acls_on(kafka.DESTINATION, topic_name) == READ_ONLY_ACLS, 30, "read-only")
    acls.names |= {topic_name, control}
    return link, topic_name, control


def plain_producer() -> dict[str, str]:
    """A client of the destination's PLAINTEXT listener: User:ANONYMOUS, no super user."""
    return {"bootstrap.servers": kafka.DESTINATION.bootstrap}


def test_a_synced_allow_write_does_not_make_a_mirror_writable(mirror_with_control, acls):
    link, mirror_topic, control = mirror_with_control
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    read_only_rules = keys(*read_only.bindings(mirror_topic))
    allowed = [
        acl(mirror_topic, "User:*", "WRITE"),
        acl(mirror_topic, f"User:{unique_name('writer')}", "WRITE"),
        acl(mirror_topic, ANONYMOUS, "WRITE"),  # the very principal that will try
        acl(control, ANONYMOUS, "WRITE"),
    ]
    acls.create(kafka.SOURCE, *allowed)

    outcome = sync(link)
    assert sorted(outcome.created) == sorted(acl_sync.describe(b) for b in allowed)
    # The filters select the mirror's read-only rules, which the source lacks: kept anyway.
    assert outcome.deleted == []
    settle(acls, keys(*allowed) | read_only_rules)
    assert read_only.present(destination, mirror_topic) == frozenset(
        (b.operation, b.permission_type) for b in read_only.bindings(mirror_topic)
    )

    # The synced ALLOW WRITE works where nothing denies it: the control topic takes a record.
    assert produce(plain_producer(), control, [{"value": b"allowed"}]) == [(None, 0, 0)]
    # On the mirror the read-only DENY WRITE for User:* wins over both ALLOWs.
    assert refused(produce(plain_producer(), mirror_topic, [{"value": b"nope"}]))
    assert destination.end_offsets(mirror_topic, 1) == {0: 0}

    # And it stays so on the next runs.
    assert sync(link).deleted == []
    assert refused(produce(plain_producer(), mirror_topic, [{"value": b"nope"}]))


def test_a_source_deny_write_removed_on_the_source_leaves_the_mirrors_rule(
    mirror_with_control, acls
):
    link, mirror_topic, control = mirror_with_control
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    deny_mirror = acl(mirror_topic, "User:*", "WRITE", "DENY")  # the read-only rule itself
    deny_control = acl(control, "User:*", "WRITE", "DENY")
    allow = acl(mirror_topic, ANONYMOUS, "WRITE")
    acls.create(kafka.SOURCE, deny_mirror, deny_control, allow)

    outcome = sync(link)
    # The mirror has the DENY already: only the others are created.
    assert sorted(outcome.created) == sorted(acl_sync.describe(b) for b in (deny_control, allow))
    assert outcome.deleted == []
    # A broker answers from its own copy of the metadata: wait until it holds what was made.
    settle(acls, keys(deny_control, allow, *read_only.bindings(mirror_topic)))

    acls.delete(kafka.SOURCE, deny_mirror, deny_control)
    outcome = sync(link)
    # The same rule on an ordinary topic follows the source away; the mirror's stays.
    assert (outcome.created, outcome.deleted) == ([], [acl_sync.describe(deny_control)])
    settle(acls, keys(allow, *read_only.bindings(mirror_topic)))
    assert acls_on(kafka.DESTINATION, mirror_topic) == READ_ONLY_ACLS
    assert (AclOperation.WRITE, AclPermissionType.DENY) in read_only.present(
        destination, mirror_topic
    )
    assert refused(produce(plain_producer(), mirror_topic, [{"value": b"nope"}]))


def test_a_synced_allow_alter_does_not_let_anyone_grow_a_mirror(mirror_with_control, acls):
    link, mirror_topic, _ = mirror_with_control
    granted = acl(mirror_topic, "User:*", "ALTER")
    acls.create(kafka.SOURCE, granted)
    assert sync(link).created == [acl_sync.describe(granted)]
    settle(acls, keys(granted, *read_only.bindings(mirror_topic)))

    anonymous = AdminClient({"bootstrap.servers": kafka.DESTINATION.bootstrap})
    future = anonymous.create_partitions([NewPartitions(mirror_topic, 3)])[mirror_topic]
    with pytest.raises(KafkaException) as refusal:
        future.result(30)
    assert refusal.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    destination = KafkaAdmin(admin_config(kafka.DESTINATION))
    assert destination.describe_topic(mirror_topic).partitions == 1


# Configuration, schedule, problems. -------------------------------------------------------


def test_acl_sync_is_refused_without_filters_and_on_a_prefixed_link(registered_clusters, make_link):
    destination = registered_clusters["destination"]
    source = {"bootstrap.servers": kafka.SOURCE.bootstrap}
    chosen = acl_filters(entry(name=unique_name("acl-refused")))
    no_filters = "acl.sync.enable=true needs acl.filters"
    with_prefix = "acl.sync.enable=true cannot be used on a link with cluster.link.prefix"

    with pytest.raises(ReplicationError, match=no_filters):
        create_link(ACTOR, destination, "acl-no-filters", {**source, "acl.sync.enable": "true"})
    with pytest.raises(ReplicationError, match=with_prefix):
        create_link(
            ACTOR,
            destination,
            "acl-prefixed",
            {
                **source,
                "acl.sync.enable": "true",
                "acl.filters": chosen,
                "cluster.link.prefix": "east.",
            },
        )
    assert not ClusterLink.objects.filter(name__in=["acl-no-filters", "acl-prefixed"]).exists()

    plain, prefixed = make_link(), make_link({"cluster.link.prefix": "east."})
    syncing = make_link({"acl.sync.enable": "true", "acl.filters": chosen})
    before = {link.pk: dict(link.configs) for link in (plain, prefixed, syncing)}
    with pytest.raises(ReplicationError, match=no_filters):
        alter_link_configs(ACTOR, plain, {"acl.sync.enable": "true"})
    with pytest.raises(ReplicationError, match=with_prefix):
        alter_link_configs(ACTOR, prefixed, {"acl.sync.enable": "true", "acl.filters": chosen})
    with pytest.raises(ReplicationError, match=no_filters):
        alter_link_configs(ACTOR, syncing, {}, ["acl.filters"])
    for link in (plain, prefixed, syncing):
        link.refresh_from_db()
        assert link.configs == before[link.pk]
    refusals = AuditEvent.objects.filter(result="refused")
    assert refusals.filter(action="link.create").count() == 2
    assert refusals.filter(action="link.alter_configs").count() == 3

    # Filters alone (sync off) are fine; turning sync on with them is too.
    alter_link_configs(ACTOR, plain, {"acl.filters": chosen})
    alter_link_configs(ACTOR, plain, {"acl.sync.enable": "true"})
    assert acl_sync.enabled(plain)


def test_sync_link_syncs_acls_every_acl_sync_ms_and_notes_what_stops_it(
    make_link, acls, monkeypatch
):
    topic, alice = unique_name("acl-sched"), f"User:{unique_name('alice')}"
    link = make_link(
        {
            "acl.sync.enable": "true",
            "acl.sync.ms": "5000",
            "acl.filters": acl_filters(entry(name=topic, principal=alice)),
        }
    )
    first, second = acl(topic, alice, "READ"), acl(topic, alice, "DESCRIBE")
    acls.create(kafka.SOURCE, first)
    start = timezone.now()

    def run(at):
        link.refresh_from_db()
        syncers.sync_link(link, at)
        link.refresh_from_db()

    run(start)  # never synced: due
    settle(acls, keys(first))
    assert link.acls_synced_at == start

    acls.create(kafka.SOURCE, second)
    run(start + timedelta(seconds=2))  # not due yet
    assert acls.mine(kafka.DESTINATION) == keys(first)
    assert link.acls_synced_at == start
    run(start + timedelta(seconds=5))
    settle(acls, keys(first, second))
    assert "ACLs" not in link.sync_problems

    # A destination that does not answer: the run fails, and the link says why...
    unreachable = KafkaAdmin({"bootstrap.servers": "127.0.0.1:1"}, timeout=1)
    monkeypatch.setattr(syncers, "destination_admin", lambda link: unreachable)
    acls.delete(kafka.SOURCE, second)
    run(start + timedelta(seconds=10))
    assert "127.0.0.1:1" in link.sync_problems["ACLs"]
    assert acls.mine(kafka.DESTINATION) == keys(first, second)
    # ...until a run works again.
    monkeypatch.undo()
    run(start + timedelta(seconds=15))
    settle(acls, keys(first))
    assert "ACLs" not in link.sync_problems

    events = AuditEvent.objects.filter(action="link.acl_sync", target=f"link {link.name}")
    assert [e.after for e in events.order_by("id")] == [
        {"created": [acl_sync.describe(first)], "deleted": []},
        {"created": [acl_sync.describe(second)], "deleted": []},
        {"created": [], "deleted": [acl_sync.describe(second)]},
    ]
