"""Automatic mirror topics: with `auto.create.mirror.topics.enable`, every source topic that
`auto.create.mirror.topics.filters` selects, now or later, gets a mirror at the link's next
metadata refresh (within `metadata.max.age.ms`).

Never mirrored automatically: internal topics (`filters.internal_topic`: Kafka's, Schema
Registry's, Confluent's services', MirrorMaker 2's, Isthmus's own), a DR drill's canary (a
name starting `isthmus-drill.`, kept for them: the drill mirrors its own, and no other topic
of such a name may be mirrored, by hand either), a source topic that is
itself a mirror fed from the link's destination (the loop rule, `mirror_checks.mirrored_back`:
with automatic mirrors both ways between two clusters, nothing comes back), and a source topic whose
mirror a user deleted (through Isthmus or on the destination itself) while only a `*` or a
PREFIXED include selects it. A LITERAL INCLUDE of the topic's own name brings it back, and so
does creating its mirror by hand. (Cluster Linking re-creates such a mirror unless the topic is
excluded first; a deletion is the user saying no.)
"""

from __future__ import annotations

import logging

from infra.kafka_admin import KafkaAdmin
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import CANARY_PREFIX, ClusterLink
from replication.topics import mirror_checks, mirrors

log = logging.getLogger(__name__)
ACTOR = audit.Actor.system("auto-create")


class NotConfigured(ReplicationError):
    """Auto-create is enabled but its filters select no topic."""


def enabled(link: ClusterLink) -> bool:
    return link.config("auto.create.mirror.topics.enable") == "true"


def wanted(link: ClusterLink, source_topics: set[str]) -> list[str]:
    """The source topics that should get a mirror now and have none."""
    chosen = filters.including(link.config("auto.create.mirror.topics.filters"), filters.TOPICS)
    if chosen is None:
        raise NotConfigured(
            "auto.create.mirror.topics.enable is true, but auto.create.mirror.topics.filters "
            'includes no topic, so no mirror is created. Set it, e.g. {"topicFilters": '
            '[{"name": "orders.", "patternType": "PREFIXED", "filterType": "INCLUDE"}]}.'
        )
    mirrored = set(link.mirrors.values_list("source_topic", flat=True))
    mirrored |= set(mirror_checks.mirrored_back(link))
    declined = set(link.declined_topics)
    return [
        topic
        for topic in sorted(source_topics)
        if not filters.internal_topic(topic)
        and not topic.startswith(CANARY_PREFIX)
        and topic not in mirrored
        and filters.selected(chosen, topic)
        and (topic not in declined or filters.literally_included(chosen, topic))
    ]


def create_wanted(link: ClusterLink, source: KafkaAdmin) -> list[str]:
    """Create the mirrors `wanted` names, in bulk requests; returns them. A topic that cannot be
    mirrored (its name taken on the destination, say) does not stop the others; the error
    names them all."""
    topics = source.list_topic_names()
    # The syncer loaded the link before it got here (after other links' syncs, and this
    # one's metadata refresh): a mirror a user deleted since, or filters changed since, must
    # not be acted on from that old copy (its mirror would come back at once).
    try:
        link.refresh_from_db(fields=["configs", "declined_topics"])
    except ClusterLink.DoesNotExist:
        return []
    if not enabled(link):
        return []
    made = mirrors.create_mirrors(ACTOR, link, wanted(link, topics), each_on_its_own=True)
    if made.mirrors:  # each one's own line is create_mirrors'
        log.info(
            "Mirrored %d source topic(s) automatically over link %s", len(made.mirrors), link.name
        )
    if made.refused:
        problems = [f"{topic}: {exc}" for topic, exc in sorted(made.refused.items())]
        raise ReplicationError(
            f"Could not mirror {len(problems)} topic(s) automatically: " + " ".join(problems)
        )
    return [m.source_topic for m in made.mirrors]
