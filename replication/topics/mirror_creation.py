"""Creating mirror topics, one or a thousand at once: each request to a cluster asks for all of
them (the topics' descriptions and configs on the source, the dry run, the read-only ACLs, the
topics themselves, where each starts), so a thousand mirrors cost the requests one does.

A mirror is made read-only first (ACLs, then the topic, so no one can write to it in between),
and nothing half-made is left behind when a step fails. All or nothing (the console, the API,
a script's many topics): one refused topic refuses the whole request, before anything is made.
Automatic mirrors take each topic on its own: a refused one is named and the others are made.
What is checked before anything is made, and how, is `mirror_checks`'s.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from confluent_kafka import KafkaError
from django.db import IntegrityError, transaction

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.kafka_topics import topic_batches
from replication.core import read_only
from replication.core.errors import ReplicationError, conflict, not_found
from replication.engine import publish
from replication.governance import audit
from replication.kafka.connections import destination_admin, source_admin
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.states.mirror_states import move_all, running_state, snapshot
from replication.topics.mirror_checks import Plan, Request, checked_plans, topic_exists, topic_spec
from spark_jobs import translation

log = logging.getLogger(__name__)

# A new topic can take a moment to show in every broker's metadata (seconds on a busy machine).
TOPIC_WAIT_S = 15.0
PARTITION_WAIT_S = 0.01  # more for each partition still to appear (see _wait_for_topics)


@dataclass
class Created:
    """What a creation made, and what it refused, by source topic."""

    mirrors: list[MirrorTopic] = field(default_factory=list)
    refused: dict[str, ReplicationError] = field(default_factory=dict)


def create_mirror(
    actor: audit.Actor,
    link: ClusterLink,
    source_topic: str,
    *,
    mirror_topic: str | None = None,
    replication_factor: int | None = None,
    configs: dict[str, str] | None = None,
    validate_only: bool = False,
    canary: bool = False,
) -> MirrorTopic:
    """Create a read-only mirror of `source_topic` on the link's destination (`canary`: a
    drill's canary, whose name no other mirror may take).

    The mirror has the source's partition count and the configs its classes call for, plus
    `configs` as overrides; its replication factor defaults to the destination's default.
    Checked in this order, each refusal saying what to do: the request itself, then what the
    clusters say (the destination's dry run too); only then is the name reserved and the topic
    made.
    """
    name = mirror_topic or link.prefix + source_topic
    made = create_mirrors(
        actor,
        link,
        [source_topic],
        names={source_topic: name},
        replication_factor=replication_factor,
        configs=configs,
        validate_only=validate_only,
        canary=canary,
    )
    return made.mirrors[0]


def create_mirrors(
    actor: audit.Actor,
    link: ClusterLink,
    source_topics: list[str],
    *,
    names: dict[str, str] | None = None,
    replication_factor: int | None = None,
    configs: dict[str, str] | None = None,
    validate_only: bool = False,
    each_on_its_own: bool = False,
    canary: bool = False,
) -> Created:
    """`create_mirror` for each of `source_topics` (the same replication factor and overrides
    for all), in bulk requests. All or nothing: a refused topic refuses the request, audited
    for each topic it concerns, and nothing is made. With `each_on_its_own` (automatic mirrors)
    a refused topic is left out, audited and returned in `refused`, and the others are made."""
    if not source_topics:
        return Created()
    names = {t: (names or {}).get(t) or link.prefix + t for t in source_topics}
    request = Request(link, names, replication_factor, dict(configs or {}), each_on_its_own, canary)
    audit.ensure_writable()
    plans = checked_plans(request, source_topics)
    if validate_only or request.undone:
        _refuse(actor, request)
        if request.undone:
            raise _all_refused(source_topics, request.refused)
        return Created([p.mirror for p in plans], request.refused)
    # Automatic mirrors are made a request's worth at a time, each handed to the engine as
    # soon as its topics appear: a broker opens a request's partitions before it shows any of
    # them, so at 10,000 partitions the first mirrors would otherwise wait for the last.
    chunks = _per_request(request, plans) if request.each_on_its_own else [plans]
    made = [plan for chunk in chunks for plan in _create(actor, request, chunk)]
    _refuse(actor, request)
    if request.undone:
        raise _all_refused(source_topics, request.refused)
    return Created([p.mirror for p in made], request.refused)


def _create(actor: audit.Actor, request: Request, plans: list[Plan]) -> list[Plan]:
    """Make these mirrors and hand them to the engine; the ones made (none when an
    all-or-nothing request was refused)."""
    link = request.link
    plans = _provision(request, _reserve(request, plans))
    if request.undone or not plans:
        return []
    note_declined(link, [p.mirror.source_topic for p in plans], False)
    publish.publish_now(link)  # copying starts now, not at the beat's next round
    for plan in plans:
        mirror = plan.mirror
        audit.record(
            actor, "mirror.create", request.target(mirror.source_topic), after=snapshot(mirror)
        )
        log.info(
            "Created mirror topic %s of %s over link %s (%d partitions, read-only %s)",
            mirror.mirror_topic,
            mirror.source_topic,
            link.name,
            mirror.num_partitions,
            "enforced" if mirror.read_only_enforced else "NOT enforced: no authorizer",
        )
    return plans


def _per_request(request: Request, plans: list[Plan]) -> list[list[Plan]]:
    """`plans` in the batches the destination's controller takes in one request each."""
    by_name = {p.mirror.mirror_topic: p for p in plans}
    specs = [topic_spec(p, request.replication_factor) for p in plans]
    return [[by_name[spec.name] for spec in batch] for batch in topic_batches(specs)]


def _refuse(actor: audit.Actor, request: Request) -> None:
    """Audit each refused topic as its own refused (or, when a cluster failed it, failed)
    creation."""
    for topic, error in request.refused.items():
        failed = error.status == 503
        result = AuditEvent.Result.FAILED if failed else AuditEvent.Result.REFUSED
        target = request.target(topic)
        audit.record(actor, "mirror.create", target, result=result, message=str(error))


def _all_refused(topics: list[str], refused: dict[str, ReplicationError]) -> ReplicationError:
    """The request's refusal: the topic's own words for one topic; for many, each named."""
    first = next(iter(refused.values()))
    if len(topics) == 1:
        return first
    said = " ".join(f"{topic}: {error}" for topic, error in sorted(refused.items())[:20])
    more = f" (and {len(refused) - 20} more)" if len(refused) > 20 else ""
    return ReplicationError(
        f"{len(refused)} of the {len(topics)} mirror topics cannot be created, so none was: "
        f"{said}{more} Leave them out, or fix what is said, and ask again.",
        first.status,
    )


# Making them: the rows (which reserve the names), then ACLs, topics and starts in bulk. -----


def _reserve(request: Request, plans: list[Plan]) -> list[Plan]:
    """Save the mirrors' rows, which reserve their names, before the destination is touched;
    the link's row locked, so a deletion of the link cannot take these mirrors along."""
    link, saved = request.link, []
    try:
        with transaction.atomic():
            if not ClusterLink.objects.select_for_update().filter(pk=link.pk).exists():
                raise not_found(f"Cluster link {link.name!r} was deleted meanwhile.")
            for plan in plans:
                try:
                    with transaction.atomic():
                        plan.mirror.save()
                except IntegrityError:
                    request.refused[plan.mirror.source_topic] = conflict(
                        f"Topic {plan.mirror.mirror_topic!r} is being created as a mirror already."
                    )
                    continue
                saved.append(plan)
            if request.undone:
                raise _Undone
    except _Undone:
        return []
    except ReplicationError as exc:
        return request.refuse([p.mirror.source_topic for p in plans], exc)
    return saved


class _Undone(Exception):
    """Rolls back every row of an all-or-nothing creation that cannot be whole."""


@dataclass
class _Made:
    """What provisioning did, for the undo and the rows."""

    had: dict[str, frozenset[read_only.Rule]] | None = None  # read-only ACLs before: not ours
    made: set[str] = field(default_factory=set)  # topics it may have made (a timed-out one too)
    failed: dict[str, Exception] = field(default_factory=dict)
    enforced: bool = False
    infos: dict = field(default_factory=dict)


def _provision(request: Request, plans: list[Plan]) -> list[Plan]:
    """Make the read-only topics and pin where each starts; a topic that fails is undone
    (every step this call made for it, and only those) and its mirror forgotten; all of them
    are when the creation is all or nothing."""
    if not plans:
        return []
    link = request.link
    admin = destination_admin(link)
    names = [p.mirror.mirror_topic for p in plans]
    done = _make(link, admin, plans, request.replication_factor)
    if done.failed and not request.each_on_its_own:
        done.failed = {name: done.failed.get(name) or _WithTheOthers() for name in names}
    undone = [p for p in plans if p.mirror.mirror_topic in done.failed]
    _undo(admin, undone, done.made, done.had)
    for plan in undone:
        request.refused[plan.mirror.source_topic] = _failure(link, plan, done.failed)
    good = [p for p in plans if p.mirror.mirror_topic not in done.failed]
    for plan in good:
        plan.mirror.read_only_enforced = done.enforced
        plan.mirror.replication_factor = done.infos[plan.mirror.mirror_topic].replication_factor
    MirrorTopic.objects.bulk_update(
        [p.mirror for p in good], ["read_only_enforced", "replication_factor"]
    )
    state = running_state(link, False)
    move_all(MirrorTopic.objects.filter(pk__in=[p.mirror.pk for p in good]), "provision", state)
    for plan in good:
        plan.mirror.state = state
    return good


def _make(
    link: ClusterLink, admin: KafkaAdmin, plans: list[Plan], replication_factor: int | None
) -> _Made:
    """ACLs first, then the topics, then where each starts: one request each for all."""
    names = [p.mirror.mirror_topic for p in plans]
    done = _Made()
    try:
        done.had = read_only.present_all(admin, names)
        done.enforced = read_only.enforce_all(admin, names)
        done.made = set(names)
        done.failed = dict(admin.create_topics([topic_spec(p, replication_factor) for p in plans]))
        for name, exc in done.failed.items():
            if isinstance(exc, KafkaAdminError) and exc.code == KafkaError.TOPIC_ALREADY_EXISTS:
                done.made.discard(name)  # someone made a topic of the name since: theirs
        done.infos = _wait_for_topics(
            admin,
            {
                p.mirror.mirror_topic: p.mirror.num_partitions
                for p in plans
                if p.mirror.mirror_topic not in done.failed
            },
        )
        for name in names:
            if name not in done.failed and name not in done.infos:
                done.failed[name] = KafkaAdminError(f"topic {name!r} did not appear in time")
        good = [p for p in plans if p.mirror.mirror_topic not in done.failed]
        _pin_starts(link, source_admin(link), admin, good, done.infos)
    except (KafkaAdminError, translation.StoreFailed) as exc:
        done.failed = dict.fromkeys(names, exc)
    return done


def _failure(link: ClusterLink, plan: Plan, failed: dict[str, Exception]) -> ReplicationError:
    name = plan.mirror.mirror_topic
    exc = failed[name]
    if isinstance(exc, KafkaAdminError) and exc.code == KafkaError.TOPIC_ALREADY_EXISTS:
        return topic_exists(link, name)
    if isinstance(exc, _WithTheOthers):
        return ReplicationError(
            f"Creating mirror topic {name!r} was undone with the others of its request.", 503
        )
    return ReplicationError(f"Creating mirror topic {name!r} failed and was undone: {exc}", 503)


class _WithTheOthers(Exception):
    """A topic undone because another of its all-or-nothing request failed."""


def _undo(
    admin: KafkaAdmin,
    plans: list[Plan],
    made: set[str],
    had: dict[str, frozenset[read_only.Rule]] | None,
) -> None:
    """Delete what was made of these mirrors (the ACLs only when what was there before is
    known: none of that is lifted) and forget them."""
    if not plans:
        return
    names = [p.mirror.mirror_topic for p in plans]
    try:
        admin.delete_topics([n for n in names if n in made])
        if had is not None:
            for name in names:
                read_only.lift(admin, name, keep=had.get(name, frozenset()))
    except KafkaAdminError:
        log.exception("Could not undo the half-made mirror topics %s", ", ".join(names))
    MirrorTopic.objects.filter(pk__in=[p.mirror.pk for p in plans]).delete()


def _wait_for_topics(admin: KafkaAdmin, partitions: dict[str, int]) -> dict:
    """The new topics' (name -> partitions) descriptions, once the metadata shows them; given
    up once none more appeared for a while: TOPIC_WAIT_S, and PARTITION_WAIT_S more for each
    partition still missing. A broker shows a request's topics only once it has opened the
    logs of all their partitions, and requests one after the other: 10,000 partitions in
    three requests took this machine's broker over a minute, the last ones appearing more
    than 15 s after the ones before."""

    def deadline(found: dict) -> float:
        missing = sum(n for name, n in partitions.items() if name not in found)
        return time.monotonic() + TOPIC_WAIT_S + PARTITION_WAIT_S * missing

    found = admin.describe_topics(list(partitions))
    until = deadline(found)
    while len(found) < len(partitions) and time.monotonic() < until:
        time.sleep(0.1)
        more = admin.describe_topics([n for n in partitions if n not in found])
        if more:
            found |= more
            until = deadline(found)
    return found


def _pin_starts(
    link: ClusterLink, source: KafkaAdmin, admin: KafkaAdmin, plans: list[Plan], infos: dict
) -> None:
    """Mirrors that start at the latest offset or at a time (mirror.start.offset.spec) record,
    per partition, the source offset each starts from now, as its first offset translation
    entry; the engine follows it. One read and one write for all of them."""
    spec = link.config("mirror.start.offset.spec")
    assert spec is not None  # it has a default
    if spec == "earliest" or not plans:
        return
    partitions = [(p.mirror.source_topic, n) for p in plans for n in range(p.mirror.num_partitions)]
    starts = source.offsets(partitions)
    if spec != "latest":
        at_ms = int(datetime.fromisoformat(spec).timestamp() * 1000)
        found = source.offsets(partitions, at_ms)
        starts = {tp: offset if offset >= 0 else starts[tp] for tp, offset in found.items()}
    publish.ensure_translation_topic(admin)
    ids = {p.mirror.source_topic: infos[p.mirror.mirror_topic].topic_id for p in plans}
    translation.store(
        link.destination.connection_config(),
        [(ids[t], n, translation.Entry(o, 0)) for (t, n), o in starts.items() if o > 0],
    )


def note_declined(link: ClusterLink, source_topics: list[str], declined: bool) -> None:
    """Remember that a user deleted the mirror of each of `source_topics` (or forget it, once
    they mirror it again), so auto-create leaves it alone (see `auto_mirrors`)."""
    with transaction.atomic():
        row = ClusterLink.objects.select_for_update().filter(pk=link.pk).first()
        if row is None:
            return
        topics = [t for t in row.declined_topics if t not in source_topics]
        if declined:
            topics += list(source_topics)
        if topics != row.declined_topics:
            ClusterLink.objects.filter(pk=link.pk).update(declined_topics=topics)
    link.declined_topics = topics
