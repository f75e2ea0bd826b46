"""Acting on many mirror topics of a link at once (a cutover): chosen by name or by a regex,
paused or resumed each on its own, promoted or failed over in one approval request
(`approvals.submit` takes the names). The console and the API choose them here."""

from __future__ import annotations

from collections.abc import Callable

from replication.actions.approvals import MAX_TOPICS
from replication.core import patterns
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.models import ClusterLink, MirrorTopic
from replication.topics.mirrors import get_mirror, pause_mirror, resume_mirror


def select(link: ClusterLink, names: list[str] | None, pattern: str | None) -> list[str]:
    """The link's mirror topics `names` lists, or those whose whole name matches `pattern` (a
    regex, run by RE2: its time grows with the name's length only, whatever the pattern, so no
    pattern can tie up the console). Exactly one of the two; at least one topic, at most
    MAX_TOPICS."""
    if (names is None) == (pattern is None):
        raise ReplicationError("Choose mirror topics by name or by a pattern (a regex), not both.")
    if pattern is not None:
        matcher = patterns.compiled(pattern, "The regex pattern")
        names = [
            name
            for name in link.mirrors.order_by("mirror_topic").values_list("mirror_topic", flat=True)
            if matcher.fullmatch(name)
        ]
        if not names:
            raise ReplicationError(
                f"No mirror topic of link {link.name} matches {pattern!r} (the whole name must "
                "match: orders.* for the topics starting with orders)."
            )
    if not names or not all(isinstance(n, str) for n in names):
        raise ReplicationError("Name at least one mirror topic, as a list of strings.")
    names = list(dict.fromkeys(names))
    if len(names) > MAX_TOPICS:
        raise ReplicationError(
            f"{len(names)} mirror topics chosen: one action takes at most {MAX_TOPICS}. "
            "Split them over several. Nothing was changed."
        )
    return names


SWITCHES: dict[str, Callable[..., MirrorTopic]] = {"pause": pause_mirror, "resume": resume_mirror}


def switch(
    actor: audit.Actor,
    link: ClusterLink,
    names: list[str],
    action: str,
    *,
    validate_only: bool = False,
) -> list[tuple[str, MirrorTopic | ReplicationError]]:
    """Pause or resume each named mirror on its own (each audited; one's refusal stops no
    other): per topic, the mirror as it is now or why it was refused."""
    operation = SWITCHES[action]
    outcomes: list[tuple[str, MirrorTopic | ReplicationError]] = []
    for name in names:
        try:
            mirror = get_mirror(link.destination, name, link)
            outcomes.append((name, operation(actor, mirror, validate_only=validate_only)))
        except ReplicationError as exc:
            outcomes.append((name, exc))
    return outcomes
