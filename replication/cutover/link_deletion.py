"""Deleting a cluster link: refused while it has mirrors not yet stopped, unless forced, which
fails them over first. Here, above promote, because a forced deletion is a failover of every
live mirror before the link goes.

A bidirectional link is one object: deleting it deletes both halves (the one named and the
other, into its source cluster), with their mirrors' rows and merge flows, as one audited
action. The halves' rows go in one transaction, so a deletion that fails leaves both; forcing
fails over the live mirrors of both halves first, and if any cannot be failed over nothing is
deleted (those already failed over stay writable, and the refusal names them)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import QuerySet

from replication.core import redis_channel
from replication.core.errors import ReplicationError, conflict
from replication.cutover import promote
from replication.governance import audit, stale_requests
from replication.models import ClusterLink, DrillRun, MirrorTopic
from replication.topics.links import peer_of, snapshot

log = logging.getLogger(__name__)


@dataclass
class Deletion:
    """What deleting a link deletes: its halves (the one named first; two for a bidirectional
    link whose other half is there), and, where the other half is gone, why only one goes."""

    halves: list[ClusterLink]
    other_half_gone: str = ""
    live: dict[int, list[str]] = field(default_factory=dict)  # live mirrors, by half's pk

    @property
    def bidirectional(self) -> bool:
        return len(self.halves) == 2

    def where(self) -> str:
        """ "link x into A" or "link x, both halves (into A and into B)"."""
        into = " and ".join(f"into {h.destination.name}" for h in self.halves)
        if self.bidirectional:
            return f"link {self.halves[0].name}, both halves ({into})"
        return f"link {self.halves[0].name} {into}"


def deletion(link: ClusterLink) -> Deletion:
    """What deleting `link` would delete, read now."""
    halves, gone = [link], ""
    if link.config("link.mode") == "BIDIRECTIONAL":
        try:
            halves.append(peer_of(link))
        except ReplicationError:
            gone = f"Its other half, into cluster {link.source_cluster_id}, is gone already."
    found = Deletion(halves, gone)
    for half in halves:
        found.live[half.pk] = list(live_mirrors(half).values_list("mirror_topic", flat=True))
    return found


def delete_link(
    actor: audit.Actor, link: ClusterLink, *, force: bool = False, validate_only: bool = False
) -> None:
    """Delete a link (both halves of a bidirectional one). Refused while either has mirrors not
    yet stopped, unless `force`, which fails them over first (they become ordinary writable
    topics)."""
    target = f"link {link.name}"
    with audit.refusals(actor, "link.delete", target):
        found = deletion(link)
        _refuse_while_drilled(found)
        _refuse_live_mirrors(found, force)
        if validate_only:
            return
        with redis_channel.only_one(
            f"link-delete:{link.link_id}",
            f"Cluster link {link.name!r} is being deleted by another request; reload in a moment.",
        ):
            before = {h.destination.name: snapshot(h) for h in found.halves}
            forced = _delete(actor, found, force)
    message = ""
    if found.bidirectional or found.other_half_gone:
        message = f"Deleted {found.where()}. {found.other_half_gone}".strip()
    audit.record(
        actor,
        "link.delete",
        target,
        before=before if found.bidirectional else before[link.destination.name],
        message=message,
    )
    log.info("Deleted cluster %s%s", found.where(), " (forced)" if forced else "")


def live_mirrors(link: ClusterLink) -> QuerySet[MirrorTopic]:
    """The link's mirrors not yet stopped: what deleting it must fail over first."""
    return link.mirrors.exclude(state=MirrorTopic.State.STOPPED).order_by("mirror_topic")


def forced_failovers(link: ClusterLink) -> list[promote.TopicOutcome]:
    """The failover dry run of each live mirror of the link's halves: what a forced deletion
    makes writable (each topic named with its cluster where the link has two halves)."""
    found = deletion(link)
    outcomes = []
    for half in found.halves:
        names = found.live[half.pk]
        checked = promote.check(promote.FAILOVER, half, names) if names else []
        if found.bidirectional:
            for outcome in checked:
                outcome.mirror_topic = f"{outcome.mirror_topic} on {half.destination.name}"
        outcomes += checked
    return outcomes


def _refuse_while_drilled(found: Deletion) -> None:
    """Refused, forced or not, while a drill of a half runs: its canary would be left behind
    (the drill's row goes with the link, and with it what the drill made)."""
    running = DrillRun.objects.filter(link__in=found.halves, outcome=DrillRun.Outcome.RUNNING)
    if run := running.first():
        raise conflict(
            f"A drill of {found.where()} is under way (drill {run.pk}, on its canary topic "
            f"{run.canary}): deleting the link now would leave the canary behind. Wait until "
            "the drill ends (the readiness page shows it; at most 30 minutes), then delete "
            "the link. Nothing was changed."
        )


def _refuse_live_mirrors(found: Deletion, force: bool) -> None:
    """Refused while a half has mirrors not yet stopped, unless `force`."""
    live = [
        f"{name} on {half.destination.name}" if found.bidirectional else name
        for half in found.halves
        for name in found.live[half.pk]
    ]
    if live and not force:
        raise conflict(
            f"Cluster {found.where()} still has mirror topics: {', '.join(live)}. Promote, fail "
            "over or delete them first, or force the deletion, which fails them over."
        )


def _delete(actor: audit.Actor, found: Deletion, force: bool) -> bool:
    """Fail over the halves' live mirrors (read afresh, under the deletion's lock), then delete
    the halves in one transaction with their rows locked, so that no mirror made meanwhile is
    deleted with them (`create_mirror` locks the row too) and a failure leaves both. Returns
    whether it failed any over."""
    fresh = deletion(found.halves[0])
    _refuse_live_mirrors(fresh, force)
    failed_over: list[str] = []
    for half in fresh.halves:
        if fresh.live[half.pk]:
            _fail_over(actor, fresh, half, failed_over)
    with transaction.atomic():
        pks = [h.pk for h in found.halves]
        # Fetched, not counted: count() drops FOR UPDATE, and unlocked, a request made for
        # the link meanwhile would still point at it when the deletion commits.
        locked = ClusterLink.objects.select_for_update().filter(pk__in=pks).order_by("pk")
        if len(locked.values_list("pk", flat=True)) != len(pks):
            raise conflict(f"Cluster {found.where()} was deleted meanwhile.")
        added = MirrorTopic.objects.filter(link__in=pks).exclude(state=MirrorTopic.State.STOPPED)
        if added.exists():
            raise conflict(
                f"Mirror topic {', '.join(m.mirror_topic for m in added)} was added to "
                f"{found.where()} meanwhile; the link was not deleted. Delete it again."
            )
        _refuse_while_drilled(found)  # (one started meanwhile)
        for half in found.halves:
            stale_requests.supersede(half, None, f"{actor.name} deleted link {half.name}")
        ClusterLink.objects.filter(pk__in=pks).delete()
    return any(fresh.live.values())


def _fail_over(actor: audit.Actor, found: Deletion, half: ClusterLink, done: list[str]) -> None:
    """A forced deletion's failovers of one half, each added to `done` (named with its cluster
    where the link has two halves); refused, deleting nothing, if any fails."""
    names = found.live[half.pk]
    outcomes = promote.stop_mirrors(actor, half, names, promote.FAILOVER, wait=True)
    on = f" on {half.destination.name}" if found.bidirectional else ""
    done += [f"{o.mirror_topic}{on}" for o in outcomes if not o.error]
    failed = [o for o in outcomes if o.error]
    if failed:
        raise conflict(
            " ".join(f"Could not fail over {o.mirror_topic!r}{on}: {o.error}" for o in failed)
            + f" The {'halves were' if found.bidirectional else 'link was'} not deleted"
            + (f"; failed over (now writable): {', '.join(done)}." if done else ".")
        )
