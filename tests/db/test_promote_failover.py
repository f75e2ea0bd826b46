"""Promote and failover on in-memory clusters: a pause racing a mirror's failure does not
overwrite it (lag refusals, the stop of the engine's writes, the diverging topics and a failover
with the source stopped are tests/integration/test_promote_failover.py, on real brokers)."""

from __future__ import annotations

import pytest

from devstack import kafka
from replication import audit
from replication.mirrors import create_mirror, pause_mirror
from replication.models import AuditEvent, MirrorTopic

State = MirrorTopic.State


def _admin(users) -> audit.Actor:
    return audit.Actor(user=users["admin"], name="admin")


def _state(mirror: MirrorTopic) -> str:
    return MirrorTopic.objects.get(pk=mirror.pk).state


def test_a_pause_racing_a_failure_does_not_overwrite_it(
    db, make_link, make_topic, topic_name, users
):
    from replication.mirrors import fail_mirror

    make_topic(kafka.SOURCE, topic_name, partitions=1)
    link = make_link()
    mirror = create_mirror(_admin(users), link, topic_name)
    stale = MirrorTopic.objects.get(pk=mirror.pk)  # a page loaded before the failure
    fail_mirror(mirror, MirrorTopic.Error.SOURCE_TOPIC_ID_CHANGED, "re-created")
    with pytest.raises(Exception, match="is FAILED now; it cannot be paused"):
        pause_mirror(_admin(users), stale)
    assert _state(mirror) == State.FAILED
    event = AuditEvent.objects.get(action="mirror.pause")
    assert event.result == "refused" and event.actor_name == "admin"
