"""What a link's filters, as edited and before they are saved, would select on its source now:
the consumer groups whose offsets would be synced, the source topics that would get mirrors
automatically (and those skipped: internal ones, and mirrors fed from the link's destination,
which would loop), the source ACLs that would be synced.

Each function takes the link and its parsed filters (`filters.parse_names`, `parse_acls`) and
asks the source through the link's own connection, as the link's syncers would. The answers are
bounded: the first `LIMIT` names (sorted) and how many there are in all. A source that does not
answer, or refuses, raises ReplicationError saying so; nothing is ever changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from confluent_kafka.admin import AclBinding

from infra.kafka_errors import AuthorizerDisabled, KafkaAdminError
from replication.core import filters
from replication.core.errors import ReplicationError
from replication.kafka.connections import source_admin
from replication.models import ClusterLink
from replication.topics import mirror_checks

LIMIT = 200


@dataclass(frozen=True)
class Names:
    """Names of one kind, sorted, the first LIMIT of `count`."""

    shown: list[str]
    count: int

    @property
    def more(self) -> int:
        return self.count - len(self.shown)


def _names(found: Iterable[str]) -> Names:
    ordered = sorted(found)
    return Names(ordered[:LIMIT], len(ordered))


@dataclass(frozen=True)
class GroupPreview:
    on_source: int  # consumer groups on the source
    selected: Names  # those the filters select: their offsets would be synced


@dataclass(frozen=True)
class TopicPreview:
    on_source: int  # topics on the source, internal ones included
    selected: Names  # selected, not internal: they would get mirrors (unless they have one)
    internal: Names  # selected, but internal: never mirrored automatically
    looping: list[tuple[str, str]]  # selected, but mirrors fed from the destination: (name, why)
    mirrored: Names  # of `selected`, those this link already mirrors


@dataclass(frozen=True)
class Acl:
    """A source ACL binding in Kafka's words (TOPIC, LITERAL, READ, ALLOW)."""

    resource_type: str
    name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


@dataclass(frozen=True)
class AclPreview:
    selected: list[Acl]  # the first LIMIT of the ACLs any filter selects, sorted
    count: int
    per_filter: list[int]  # how many ACLs each filter selects, in the filters' order

    @property
    def more(self) -> int:
        return self.count - len(self.selected)


def _source_did_not_answer(link: ClusterLink, exc: KafkaAdminError) -> ReplicationError:
    return ReplicationError(
        f"The source cluster of link {link.name} did not answer, so there is nothing to "
        f"preview: {exc}"
    )


def preview_groups(link: ClusterLink, group_filters: Sequence[filters.NameFilter]) -> GroupPreview:
    """The source's consumer groups the filters select."""
    try:
        groups = source_admin(link).list_group_ids()
    except KafkaAdminError as exc:
        raise _source_did_not_answer(link, exc) from exc
    return GroupPreview(
        on_source=len(groups),
        selected=_names(g for g in groups if filters.selected(group_filters, g)),
    )


def preview_topics(link: ClusterLink, topic_filters: Sequence[filters.NameFilter]) -> TopicPreview:
    """The source topics the filters select, apart from those they select but that are never
    mirrored automatically (internal ones, and mirrors fed from the destination), each said."""
    try:
        topics = source_admin(link).list_topic_names()
    except KafkaAdminError as exc:
        raise _source_did_not_answer(link, exc) from exc
    chosen = {t for t in topics if filters.selected(topic_filters, t)}
    internal = {t for t in chosen if filters.internal_topic(t)}
    back = mirror_checks.mirrored_back(link)
    looping = sorted((t, back[t]) for t in chosen - internal if t in back)
    kept = chosen - internal - set(back)
    mirrored = set(link.mirrors.values_list("source_topic", flat=True))
    return TopicPreview(
        on_source=len(topics),
        selected=_names(kept),
        internal=_names(internal),
        looping=looping[:LIMIT],
        mirrored=_names(kept & mirrored),
    )


def _acl(binding: AclBinding) -> Acl:
    return Acl(*(str(part) if part is not None else "" for part in filters.binding_key(binding)))


def preview_acls(link: ClusterLink, acl_filters: Sequence[filters.AclFilter]) -> AclPreview:
    """The source's ACLs the filters select: the source applies each filter (Kafka's binding
    filter semantics, as `kafka-acls --list` does), and an ACL any of them selects is synced."""
    admin = source_admin(link)
    found: dict[tuple, Acl] = {}
    per_filter = []
    for f in acl_filters:
        try:
            bindings = admin.describe_acls(f.binding_filter())
        except AuthorizerDisabled as exc:
            raise ReplicationError(
                f"The source cluster of link {link.name} runs no authorizer, so it has no ACLs "
                "to select or sync. Enable an authorizer (e.g. StandardAuthorizer) on the "
                "source, or leave ACL sync off."
            ) from exc
        except KafkaAdminError as exc:
            raise _source_did_not_answer(link, exc) from exc
        per_filter.append(len(bindings))
        for binding in bindings:
            found[filters.binding_key(binding)] = _acl(binding)
    ordered = [found[key] for key in sorted(found, key=lambda k: tuple(map(str, k)))]
    return AclPreview(ordered[:LIMIT], len(ordered), per_filter)
