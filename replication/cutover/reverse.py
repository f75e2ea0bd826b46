"""Reverse a mirror on a bidirectional link (reverse-and-start-mirror, reverse-and-pause-mirror):
the planned switchover. The mirror becomes the writable topic and its source becomes a
read-only mirror of it, continuing at the same offsets: no record is copied.

On stock Kafka this is done with what it has (docs/mirror-engine.md, "Reverse"):

1. The source topic is fenced: the deny-write rules that make mirrors read-only are put on it,
   and its end offsets are noted (PENDING_SYNCHRONIZE; the mirror keeps copying).
2. Once the mirror holds every record up to those offsets, it leaves the link's mirror set as
   in a promote (PENDING_STOPPED) and the link's stream acknowledges it no longer writes it.
3. The fence is checked: a privileged client (a super user) writes past ACLs, so the source's
   end offsets must not have moved. If they did, or the mirror is not at the fence, everything
   is put back as it was (the fence lifted, the mirror ACTIVE again), with the reason.
4. Else the mirror is STOPPED and writable, and the old source topic becomes a mirror of it on
   the link's other half, its fence staying as its read-only rules (PAUSED for the pause
   variant). Its copy starts at its own end: the offsets are the same on both sides.

Each step is stored on the mirror (its state and `pending_stop`), so a worker killed at any
point leaves work that `finish` (run twice a second while a reverse is under way, and by the
supervisor's backstop) completes or rolls back.

Only a mirror whose offsets are identical to its source's can be reversed: where compaction or
transactions left the two sides' offsets different, the other direction would need its
translation run backwards, which the engine does not do; promote and mirror it anew instead.
"""

from __future__ import annotations

import logging
from datetime import datetime

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from infra.kafka_errors import KafkaAdminError
from replication.core import read_only
from replication.core.errors import ReplicationError, unavailable
from replication.core.redis_channel import client
from replication.cutover.promote import TopicOutcome, carry_out, one_by_one, outcomes_for
from replication.cutover.stop_batches import record_put_back, stop_report
from replication.engine import publish
from replication.governance import audit, stale_requests
from replication.kafka import translations
from replication.kafka.connections import cluster_admin, destination_admin, records, source_admin
from replication.models import ClusterLink, MirrorTopic, PendingStop
from replication.schemas import subject_promotion
from replication.states.mirror_states import move
from replication.topics import links, offset_sync
from replication.topics.mirrors import running_state, snapshot
from spark_jobs import translation

log = logging.getLogger(__name__)

START, PAUSE = "reverse-and-start-mirror", "reverse-and-pause-mirror"
KINDS = (START, PAUSE)
State = MirrorTopic.State


def reverse_mirrors(
    actor: audit.Actor,
    link: ClusterLink,
    names: list[str],
    kind: str,
    *,
    validate_only: bool = False,
    wait: bool = False,
    note: str = "",
) -> list[TopicOutcome]:
    """Reverse the named mirrors of `link` (`kind` START or PAUSE), each on its own: one
    topic's refusal does not stop the others. Without `wait` the reverse goes on in the
    background (each mirror PENDING_SYNCHRONIZE when this returns); with it, this returns once
    each is reversed (STOPPED, its old source now mirroring it) or put back with its error."""
    outcomes = check(link, names)
    if not validate_only:
        carry_out(
            link,
            outcomes,
            one_by_one(lambda outcome: _start(actor, link, outcome, kind, note)),
            lambda: finish(link),
            wait=wait,
            timeout=2 * settings.STOP_TIMEOUT_S + 15,
        )
    return outcomes


def check(link: ClusterLink, names: list[str]) -> list[TopicOutcome]:
    """The dry run: per topic, whether it may be reversed now, with its lag per partition.
    The link itself must be one half of a bidirectional link without a prefix (refused
    whole, saying why)."""
    peer = links.peer_of(link)
    if refused := prefix_refusal(link):
        raise ReplicationError(refused)
    return outcomes_for(
        link, names, lambda mirror, status: _refusal(mirror, peer, status.errors, status.partitions)
    )


def prefix_refusal(link: ClusterLink) -> str:
    """Why `link`'s prefix refuses every reverse on it; "" when it has none."""
    if not link.config("cluster.link.prefix"):
        return ""
    return (
        f"Cluster link {link.name!r} names its mirrors with the prefix "
        f"{link.config('cluster.link.prefix')!r}, so the old source cannot take the mirror's "
        "name: reverse operations need a link without a prefix (as in Confluent's). Nothing "
        "was changed."
    )


def state_refusal(mirror: MirrorTopic, counterpart: MirrorTopic | None) -> str:
    """Why `mirror` cannot be reversed as it stands, given `counterpart`, the other half's mirror
    row of its source topic (None if it has none); "" if it can."""
    if mirror.state != State.ACTIVE:
        return f"Mirror topic {mirror.mirror_topic!r} is {mirror.state}; a reverse needs it ACTIVE."
    if counterpart is not None and counterpart.state != State.STOPPED:
        return (
            f"Topic {mirror.source_topic!r} is already a mirror topic of link "
            f"{counterpart.link.name!r} on {counterpart.destination.name}."
        )
    return ""


def _refusal(mirror: MirrorTopic, peer: ClusterLink, errors: list[str], partitions) -> str:
    counterpart = peer.mirrors.filter(mirror_topic=mirror.source_topic).first()
    if refused := state_refusal(mirror, counterpart):
        return refused
    if errors or not partitions:
        name = mirror.mirror_topic
        return f"The state of {name!r} could not be read: {'; '.join(errors) or 'no partitions'}."
    return ""


def _start(
    actor: audit.Actor, link: ClusterLink, outcome: TopicOutcome, kind: str, note: str
) -> MirrorTopic | None:
    """Fence the source of one checked topic and let its mirror catch up (audited); None,
    with the refusal in `outcome`, if it could not begin."""
    target = f"mirror {outcome.mirror_topic}"
    try:
        with audit.refusals(actor, f"mirror.{kind}", target):
            if outcome.error:
                raise ReplicationError(outcome.error, outcome.status)
            mirror = link.mirrors.get(mirror_topic=outcome.mirror_topic)
            before = snapshot(mirror)
            pending = {
                "kind": kind,
                "prior_state": mirror.state,
                "requested_at": timezone.now().isoformat(),
                "actor": actor.name,
                "note": note,
            }
            move(
                mirror, "reverse", State.PENDING_SYNCHRONIZE, pending_stop=pending, action_error=""
            )
            try:
                _fence(mirror)
            except KafkaAdminError as exc:
                _put_back(mirror, f"The source cluster refused the fence: {exc}")
                raise unavailable(
                    f"The source topic {mirror.source_topic!r} could not be fenced: {exc} "
                    "Nothing was changed; try again."
                ) from exc
    except ReplicationError as exc:
        outcome.error, outcome.status = str(exc), exc.status
        return None
    outcome.state = mirror.state
    stale_requests.supersede(
        link, [mirror.mirror_topic], f"{actor.name} reversed {mirror.mirror_topic}"
    )
    audit.record(
        actor, f"mirror.{kind}", target, before=before, after=snapshot(mirror), message=note
    )
    log.info("%s of mirror topic %s requested by %s", kind, mirror, actor.name)
    return mirror


def _source_admin(mirror: MirrorTopic):
    """The console's admin client of the cluster holding the mirror's source topic (the other
    half's destination): the fence is put and checked with it."""
    return cluster_admin(links.peer_of(mirror.link).destination)


def _fence(mirror: MirrorTopic) -> None:
    """Make the source topic read-only and note where it ends (stored on the mirror)."""
    admin = _source_admin(mirror)
    read_only.enforce(admin, mirror.source_topic)
    ends = admin.end_offsets(mirror.source_topic, mirror.num_partitions)
    pending: PendingStop = {**mirror.pending(), "fence": {str(p): o for p, o in ends.items()}}
    MirrorTopic.objects.filter(pk=mirror.pk).update(pending_stop=pending)
    mirror.pending_stop = pending


def finish(link: ClusterLink) -> None:
    """Move each reverse of `link` on: a caught-up mirror stops, a stopped writer completes
    the swap; one that cannot go on in time is put back. Under the link's control lock, so one
    caller at a time moves a given mirror."""
    reversing = link.mirrors.filter(state=State.PENDING_SYNCHRONIZE) | link.mirrors.filter(
        state=State.PENDING_STOPPED, pending_stop__kind__in=KINDS
    )
    if not reversing.exists():
        return
    with publish.control_lock(link, wait=10) as locked:
        if not locked:
            return
        for mirror in reversing.select_related("link", "link__destination"):
            try:
                _step(mirror)
            except (KafkaAdminError, ReplicationError, redis.RedisError) as exc:
                log.warning("Reverse of %s waits: %s", mirror.mirror_topic, exc)
                if _overdue(mirror, 2):
                    _put_back(mirror, f"The reverse could not go on: {exc}")


def _overdue(mirror: MirrorTopic, times: int = 1) -> bool:
    asked = datetime.fromisoformat(mirror.pending()["requested_at"])
    return (timezone.now() - asked).total_seconds() > times * settings.STOP_TIMEOUT_S


def _step(mirror: MirrorTopic) -> None:
    pending = mirror.pending()
    if mirror.state == State.PENDING_SYNCHRONIZE:
        if "fence" not in pending:  # a worker died between the state change and the fence
            _fence(mirror)
        ends = destination_admin(mirror.link).end_offsets(
            mirror.mirror_topic, mirror.num_partitions
        )
        if _behind(mirror, ends) is None:
            _stop_writer(mirror)
        elif _overdue(mirror):
            _put_back(
                mirror,
                f"The mirror did not catch up with its fenced source within "
                f"{settings.STOP_TIMEOUT_S} s (it holds {ends}, the source ends at "
                f"{mirror.pending()['fence']}). Everything is as it was; look at the link's "
                "stream, then try again.",
            )
        return
    generation = pending.get("generation")
    if generation is not None and publish.stopped_writing(
        mirror.link, mirror.mirror_topic, generation
    ):
        _swap(mirror)
    elif _overdue(mirror, 2):
        _put_back(
            mirror,
            f"The link's stream did not confirm that it stopped writing {mirror.mirror_topic!r}. "
            "Everything is as it was; look at the link's stream, then try again.",
        )


def _stop_writer(mirror: MirrorTopic) -> None:
    """The mirror holds every record of its fenced source: it leaves the link's mirror set."""
    move(mirror, "synchronized", State.PENDING_STOPPED)
    generation = publish.publish(mirror.link, client())
    pending: PendingStop = {**mirror.pending(), "generation": generation}
    MirrorTopic.objects.filter(pk=mirror.pk).update(pending_stop=pending)
    mirror.pending_stop = pending


def _swap(mirror: MirrorTopic) -> None:
    """The writer stopped: if the fence held, the mirror becomes writable and its old source a
    mirror of it; else everything is put back."""
    pending = mirror.pending()
    fence = {int(p): o for p, o in pending["fence"].items()}
    destination = destination_admin(mirror.link)
    held = destination.end_offsets(mirror.mirror_topic, mirror.num_partitions)
    source = _source_admin(mirror)
    now = source.end_offsets(mirror.source_topic, mirror.num_partitions)
    if now != fence or _behind(mirror, held, exact=True) is not None:
        _put_back(
            mirror,
            f"The fence on {mirror.source_topic!r} did not hold: it ended at {fence} when "
            f"fenced and at {now} now (a privileged client writes past ACLs), the mirror at "
            f"{held}. Everything is as it was: the source writable, the mirror following it. "
            "Stop what writes the source with a super user's rights, then try again.",
        )
        return
    peer = links.peer_of(mirror.link)
    info = source.describe_topic(mirror.source_topic)
    mirrored_id = destination.describe_topic(mirror.mirror_topic).topic_id
    paused = pending["kind"] == PAUSE
    before = snapshot(mirror)
    _translate_back(mirror, source, info.topic_id, held, fence)
    with transaction.atomic():
        # A swap back: the old relationship's STOPPED record gives way to the new one (the
        # audit trail keeps its history).
        peer.mirrors.filter(mirror_topic=mirror.source_topic, state=State.STOPPED).delete()
        reversed_mirror = MirrorTopic.objects.create(
            link=peer,
            destination=peer.destination,
            source_topic=mirror.mirror_topic,
            mirror_topic=mirror.source_topic,
            source_topic_id=mirrored_id,
            num_partitions=info.partitions,
            replication_factor=info.replication_factor,
            state=running_state(peer, paused),
            paused=paused,
        )
        move(
            mirror,
            "stop",
            State.STOPPED,
            stop_offsets={str(p): o for p, o in held.items()},
            stop_report=stop_report(
                pending,
                {str(p): 0 for p in held},
                reversed=f"{mirror.source_topic} on {peer.destination.name} now mirrors it "
                f"over link {peer.name}",
            ),
            pending_stop=None,
            paused=False,
        )
    read_only.lift(destination, mirror.mirror_topic)
    subject_promotion.release_subjects([mirror], audit.Actor.system(pending["kind"]))
    publish.publish(peer, client())
    _record_swap(mirror, reversed_mirror, before)
    _sync_groups_back(peer, reversed_mirror)


def _behind(mirror: MirrorTopic, held: dict[int, int], exact: bool = False) -> int | None:
    """The first partition where the mirror (ending at `held`) lacks a record its fenced
    source holds, or with `exact` holds one past the fence; None when it holds all, and only,
    what the source held at the fence. In source offsets, through the mirror's translation:
    transaction markers and aborted records, which are never copied, do not count."""
    fence = {int(p): o for p, o in mirror.pending()["fence"].items()}
    if held == fence:
        return None  # identical offsets (or gaps both sides agree on): nothing to read
    runs = translations.of_topic(mirror.destination, mirror.mirror_topic)
    source = records(links.peer_of(mirror.link).destination)
    for p, end in fence.items():
        r = runs.get(p, translation.Runs()).upto(held[p])
        copied_upto = r.next_source(held[p])
        if copied_upto > end and exact:
            return p
        if copied_upto < end and source.holds_records(mirror.source_topic, p, copied_upto, end):
            return p
    return None


def _translate_back(
    mirror: MirrorTopic, source, topic_id: str, held: dict[int, int], fence: dict[int, int]
) -> None:
    """Where the mirror's offsets differ from its source's, the reversed mirror (the old
    source) gets the same correspondence the other way round, and continues at its own end:
    the new primary's next record lands after the old source's last one."""
    runs = translations.of_topic(mirror.destination, mirror.mirror_topic)
    entries = []
    for p, end in fence.items():
        r = runs.get(p, translation.Runs()).upto(held[p])
        back = translation.Runs([translation.Entry(e.destination, e.source) for e in r.entries])
        if back.next_source(end) != held[p]:  # trailing markers on the old source
            back.add(translation.Entry(held[p], end))
        entries += [(topic_id, p, e) for e in back.entries]
    if entries:
        publish.ensure_translation_topic(source)
        translation.store(links.peer_of(mirror.link).destination.connection_config(), entries)


def _record_swap(mirror: MirrorTopic, reversed_mirror: MirrorTopic, before: dict) -> None:
    kind = audit.Actor.system("reverse")
    audit.record(
        kind,
        "mirror.stopped",
        f"mirror {mirror.mirror_topic}",
        before=before,
        after=snapshot(mirror),
    )
    audit.record(
        kind,
        "mirror.create",
        f"mirror {reversed_mirror.mirror_topic}",
        after=snapshot(reversed_mirror),
        message=f"The old source of {mirror.mirror_topic}, reversed at the same offsets.",
    )
    log.info(
        "Reversed %s: it is writable at offsets %s and %s on %s mirrors it",
        mirror.mirror_topic,
        mirror.stop_offsets,
        reversed_mirror.mirror_topic,
        reversed_mirror.destination.name,
    )


def _sync_groups_back(peer: ClusterLink, reversed_mirror: MirrorTopic) -> None:
    """Consumer offsets follow the new direction at once (where the other half syncs them),
    so a group moved back finds its offsets; the syncers keep them in step from then on."""
    if not offset_sync.enabled(peer):
        return
    try:
        offset_sync.sync_offsets(
            peer,
            timezone.now(),
            source_admin(peer),
            destination_admin(peer),
            only=[reversed_mirror],
        )
    except (KafkaAdminError, ReplicationError) as exc:
        log.warning("First offset sync of %s after its reverse failed: %s", reversed_mirror, exc)


def _put_back(mirror: MirrorTopic, message: str) -> None:
    """Undo a reverse that cannot go on: the source's fence lifted, the mirror following it
    again (its read-only rules were never lifted), the reason on it."""
    pending = mirror.pending_stop or {}
    try:
        read_only.lift(_source_admin(mirror), mirror.source_topic)
    except (KafkaAdminError, ReplicationError):
        log.exception("Could not lift the fence of %s", mirror.source_topic)
    before = snapshot(mirror)
    event = "abort-reverse" if mirror.state == State.PENDING_SYNCHRONIZE else "abort-stop"
    move(
        mirror,
        event,
        running_state(mirror.link, mirror.paused),
        pending_stop=None,
        action_error=message,
    )
    record_put_back(mirror, pending, before, message, "mirror.reverse_failed")
