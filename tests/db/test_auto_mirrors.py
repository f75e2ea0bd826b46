"""Automatic mirror topics, on in-memory clusters: with auto.create.mirror.topics.enable, which
source topics get mirrors at the link's metadata refresh, and which never (excluded, unselected,
internal). That they are then copied exactly is tests/integration/test_auto_mirrors.py.

The syncers run through `syncers.sync_link`, made due by clearing the link's
metadata_refreshed_at (or by the time it is given), to control the moment it runs."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from devstack import kafka
from replication.models import ClusterLink, MirrorTopic
from replication.sync import auto_mirrors, syncers
from replication.topics.links import alter_link_configs
from replication.topics.mirrors import delete_mirror
from tests.mirror_checks import (
    ACTOR,
)

pytestmark = [pytest.mark.django_db]


def topic_filters(*entries: tuple[str, str, str]) -> str:
    return json.dumps(
        {"topicFilters": [{"name": n, "patternType": p, "filterType": f} for n, p, f in entries]}
    )


def auto(*entries: tuple[str, str, str], **configs: str) -> dict[str, str]:
    return {
        "auto.create.mirror.topics.enable": "true",
        "auto.create.mirror.topics.filters": topic_filters(*entries),
        **configs,
    }


def refresh(link: ClusterLink) -> None:
    """One syncer run with the metadata refresh (and so auto-create) due."""
    ClusterLink.objects.filter(pk=link.pk).update(metadata_refreshed_at=None)
    link.refresh_from_db()
    syncers.sync_link(link, timezone.now())
    link.refresh_from_db()


def mirrored(link: ClusterLink) -> dict[str, str]:
    """The link's mirrors, source topic to mirror topic."""
    return dict(link.mirrors.values_list("source_topic", "mirror_topic"))


def test_a_topic_that_cannot_be_mirrored_does_not_stop_the_others(
    make_link, make_topic, topic_name
):
    taken = make_topic(kafka.SOURCE, f"{topic_name}-taken")
    make_topic(kafka.DESTINATION, taken)  # an ordinary topic of that name is there already
    free = make_topic(kafka.SOURCE, f"{topic_name}-free")
    link = make_link(auto((f"{topic_name}-", "PREFIXED", "INCLUDE")))
    refresh(link)
    assert mirrored(link) == {free: free}
    problem = link.sync_problems["auto-create"]
    assert f"{taken}: Topic {taken!r} already exists" in problem
    assert free not in problem


def test_auto_create_without_an_include_filter_says_so_on_the_link(
    make_link, make_topic, topic_name
):
    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"auto.create.mirror.topics.enable": "true"})
    refresh(link)
    assert mirrored(link) == {}
    problem = link.sync_problems["auto-create"]
    assert "auto.create.mirror.topics.filters includes no topic" in problem
    assert '"topicFilters"' in problem  # with an example to copy

    # Excludes alone select nothing either.
    alter_link_configs(
        ACTOR,
        link,
        {"auto.create.mirror.topics.filters": topic_filters((topic_name, "LITERAL", "EXCLUDE"))},
    )
    refresh(link)
    assert "includes no topic" in link.sync_problems["auto-create"]
    assert mirrored(link) == {}

    # An include fixes it: the mirror is made and the problem goes.
    alter_link_configs(
        ACTOR,
        link,
        {"auto.create.mirror.topics.filters": topic_filters((topic_name, "LITERAL", "INCLUDE"))},
    )
    refresh(link)
    assert mirrored(link) == {topic_name: topic_name}
    assert "auto-create" not in link.sync_problems

    # Auto-create turned off says nothing more, whatever it said before.
    ClusterLink.objects.filter(pk=link.pk).update(sync_problems={"auto-create": "stale"})
    alter_link_configs(ACTOR, link, {"auto.create.mirror.topics.enable": "false"})
    refresh(link)
    assert "auto-create" not in link.sync_problems
    assert not auto_mirrors.enabled(link)


def test_a_mirror_deleted_while_the_syncer_holds_the_link_is_not_recreated(
    make_link, make_topic, topic_name
):
    topic = make_topic(kafka.SOURCE, f"{topic_name}-raced")
    link = make_link(auto((f"{topic_name}-", "PREFIXED", "INCLUDE")))
    refresh(link)
    assert mirrored(link) == {topic: topic}

    # The syncer loads every link, then works through them one by one; meanwhile a user
    # deletes the mirror (the console has its own copy of the link).
    held = ClusterLink.objects.get(pk=link.pk)
    ClusterLink.objects.filter(pk=link.pk).update(metadata_refreshed_at=None)
    held.metadata_refreshed_at = None
    delete_mirror(ACTOR, MirrorTopic.objects.get(link=link, source_topic=topic))
    syncers.sync_link(held, timezone.now())

    link.refresh_from_db()
    assert mirrored(link) == {}
    assert "auto-create" not in link.sync_problems
    assert link.declined_topics == [topic]
