"""A link's recovery point objective (RPO): the target a link may set for how far behind in
seconds its mirrors may fall (`ClusterLink.rpo_target_seconds`), set by an operator and audited;
which mirrors are further behind now (`over_target`, from the lag readings, as every page shows
them); and each breach noted once by the beat's sample (`note`): kept on the link
(`rpo_breached_at`), audited as a system event and told to the operators, and so again when every
mirror is back within the target."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from replication.core.errors import ReplicationError
from replication.core.text import whole_number
from replication.governance import audit, notifications
from replication.models import ClusterLink

log = logging.getLogger(__name__)
MAX_TARGET_S = 365 * 24 * 3600
_SAMPLER = audit.Actor.system("lag")


def parse_target(value: object) -> int | None:
    """An RPO target as given (a whole number of seconds, or empty/None for none), checked."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = whole_number(value, MAX_TARGET_S)
    if number is None:
        raise ReplicationError(
            f"The RPO target must be a whole number of seconds from 1 to {MAX_TARGET_S:,} (a "
            "year), or empty for none."
        )
    return number


def set_target(actor: audit.Actor, link: ClusterLink, seconds: int | None) -> None:
    """Set (or with None clear) the link's RPO target; the next sample checks its mirrors
    against it."""
    target = f"link {link.name}"
    with audit.refusals(actor, "link.rpo_target", target):
        before = link.rpo_target_seconds
        link.rpo_target_seconds = seconds
        fields = ["rpo_target_seconds"]
        if seconds is None and link.rpo_breached_at is not None:
            link.rpo_breached_at = None  # no target, no breach
            fields.append("rpo_breached_at")
        link.save(update_fields=fields)
        audit.record(
            actor,
            "link.rpo_target",
            target,
            before={"rpo_target_seconds": before},
            after={"rpo_target_seconds": seconds},
        )


def is_over(ms: int, target_s: int | None) -> bool:
    """Whether a lag in time (ms, -1 unknown) is over an RPO target (None: no target)."""
    return target_s is not None and ms > target_s * 1000


def checked_ms(lag_ms: int, known_ms: int, link: ClusterLink) -> int:
    """The lag in time a mirror is checked against the link's target with: its lag (-1
    unknown), or where part of it is unknown, the largest part known when that alone is over the
    target (the mirror is at least that far behind: a breach begins); else unknown."""
    if lag_ms < 0 and is_over(known_ms, link.rpo_target_seconds):
        return known_ms
    return lag_ms


def over_target(link: ClusterLink, lags_ms: dict[str, int]) -> dict[str, int]:
    """Of `lags_ms` (each mirror's largest lag in time, by mirror topic, as last read), those
    further behind than the link's RPO target; none when it has no target."""
    target = link.rpo_target_seconds
    return {m: ms for m, ms in sorted(lags_ms.items()) if is_over(ms, target)}


def describe(link: ClusterLink, behind: dict[str, int]) -> str:
    """ "Link ab: mirror orders is 340 s behind its source, over the link's RPO target of 60 s"."""
    if len(behind) == 1:
        [(mirror, ms)] = behind.items()
        said = f"mirror {mirror} is {seconds(ms)} behind its source"
    else:
        named = ", ".join(f"{m} ({seconds(ms)})" for m, ms in list(behind.items())[:10])
        more = f" and {len(behind) - 10} more" if len(behind) > 10 else ""
        said = f"mirrors {named}{more} are behind their sources"
    return f"Link {link.name}: {said}, over the link's RPO target of {link.rpo_target_seconds} s."


def seconds(ms: int) -> str:
    """A lag in time in words: "1.5 s", "340 s" up to two minutes, then "4 min 10 s", then
    "3 h 12 min"; "unknown" below 0."""
    if ms < 0:
        return "unknown"
    whole = ms // 1000
    if whole < 10:
        return f"{ms / 1000:.1f}".removesuffix(".0") + " s"
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600:,} h {whole % 3600 // 60} min"


def note(link: ClusterLink, lags_ms: dict[str, int]) -> None:
    """The beat's sample read `lags_ms` (each mirror's lag in time as `checked_ms` gives it, -1
    unknown, as a mirror is with any partition behind of unknown age): a
    breach of the link's RPO target that begins or ends is kept on the link, audited and told to
    the operators, once (a conditional update: two samples at once tell it once). A breach ends
    only when every mirror is known to be within the target (a source that stopped answering
    ends none). When the audit trail refuses, nothing is kept, and the next sample tries again."""
    behind = over_target(link, lags_ms)
    began = bool(behind) and link.rpo_breached_at is None
    known = all(ms >= 0 for ms in lags_ms.values())
    ended = not behind and known and link.rpo_breached_at is not None
    if not (began or ended):
        return
    if began:
        action, text = "link.rpo_breached", describe(link, behind)
    else:
        action = "link.rpo_met"
        text = f"Link {link.name}: every mirror is back within the link's RPO target"
        text += f" of {link.rpo_target_seconds} s." if link.rpo_target_seconds else "."
    since = timezone.now() if began else None
    try:
        with transaction.atomic():
            moved = ClusterLink.objects.filter(
                pk=link.pk, rpo_breached_at=link.rpo_breached_at
            ).update(rpo_breached_at=since)
            if not moved:
                return
            audit.record(
                _SAMPLER, action, f"link {link.name}", message=text, topics=behind, in_change=True
            )
            notifications.tell_operators(action, text)
    except ReplicationError as exc:
        log.error("Could not note link %s's RPO: %s", link.name, exc)
        return
    link.rpo_breached_at = since
