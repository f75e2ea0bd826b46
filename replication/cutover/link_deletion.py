"""Deleting a cluster link: refused while it has mirrors not yet stopped, unless forced, which
fails them over first. Here, above promote, because a forced deletion is a failover of every
live mirror before the link goes."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import QuerySet

from replication.core import redis_channel
from replication.core.errors import conflict
from replication.cutover import promote
from replication.governance import audit, stale_requests
from replication.models import ClusterLink, MirrorTopic
from replication.topics.links import snapshot

log = logging.getLogger(__name__)


def delete_link(
    actor: audit.Actor, link: ClusterLink, *, force: bool = False, validate_only: bool = False
) -> None:
    """Delete a link. Refused while it has mirrors not yet stopped, unless `force`, which fails
    them over first (they become ordinary writable topics)."""
    with audit.refusals(actor, "link.delete", f"link {link.name}"):
        _refuse_live_mirrors(link, force)
        if validate_only:
            return
        with redis_channel.only_one(
            f"link-delete:{link.link_id}",
            f"Cluster link {link.name!r} is being deleted by another request; reload in a moment.",
        ):
            before = snapshot(link)
            forced = _delete(actor, link, force)
    audit.record(actor, "link.delete", f"link {link.name}", before=before)
    log.info("Deleted cluster link %s%s", link.name, " (forced)" if forced else "")


def live_mirrors(link: ClusterLink) -> QuerySet[MirrorTopic]:
    """The link's mirrors not yet stopped: what deleting it must fail over first."""
    return link.mirrors.exclude(state=MirrorTopic.State.STOPPED).order_by("mirror_topic")


def _refuse_live_mirrors(link: ClusterLink, force: bool) -> list[MirrorTopic]:
    """The link's mirrors not yet stopped; refused unless `force`."""
    live = list(live_mirrors(link))
    if live and not force:
        raise conflict(
            f"Cluster link {link.name!r} still has mirror topics: "
            f"{', '.join(m.mirror_topic for m in live)}. Promote, fail over or delete them "
            "first, or force the deletion, which fails them over."
        )
    return live


def _delete(actor: audit.Actor, link: ClusterLink, force: bool) -> bool:
    """Fail over the link's live mirrors (read afresh, under the deletion's lock), then delete
    it in one transaction with the link's row locked, so that no mirror made meanwhile is
    deleted with it (`create_mirror` locks the row too). Returns whether it failed any over."""
    live = _refuse_live_mirrors(link, force)
    if live:
        outcomes = promote.stop_mirrors(
            actor, link, [m.mirror_topic for m in live], promote.FAILOVER, wait=True
        )
        failed = [o for o in outcomes if o.error]
        if failed:
            stopped = [o.mirror_topic for o in outcomes if not o.error]
            raise conflict(
                " ".join(f"Could not fail over {o.mirror_topic!r}: {o.error}" for o in failed)
                + " The link was not deleted"
                + (f"; failed over (now writable): {', '.join(stopped)}." if stopped else ".")
            )
    with transaction.atomic():
        if not ClusterLink.objects.select_for_update().filter(pk=link.pk).exists():
            raise conflict(f"Cluster link {link.name!r} was deleted meanwhile.")
        added = link.mirrors.exclude(state=MirrorTopic.State.STOPPED)
        if added.exists():
            raise conflict(
                f"Mirror topic {', '.join(m.mirror_topic for m in added)} was added to link "
                f"{link.name!r} meanwhile; the link was not deleted. Delete it again."
            )
        stale_requests.supersede(link, None, f"{actor.name} deleted link {link.name}")
        link.delete()
    return bool(live)
