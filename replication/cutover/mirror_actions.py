"""Which actions a mirror offers now, and why the others cannot run: one answer for the
console's buttons, the API's `isthmus_actions` and `kafka-mirrors --describe`.

Read from the database only (no cluster is asked), so a page of many mirrors costs a few
queries: an action offered here may still be refused by its dry run (a promote's lag, a
cluster not answering), which says why. The rules are the cutover modules' own refusals
(`promote.state_refusal`, `reverse.state_refusal`, `restore_plan.standing_refusal`), so what
is offered is what they accept.

Where a topic stands on a bidirectional link is here too: a stopped topic whose old source now
mirrors it (after a reverse or a fail back) is the primary, and `Standing.mirrored_by` says
where its mirror is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from replication.core.errors import ReplicationError
from replication.cutover import promote, restore_plan, reverse
from replication.models import ApprovalRequest, ClusterLink, MirrorTopic
from replication.states.mirror_states import FOLLOWING, TRANSITIONS
from replication.topics import links
from replication.topics.mirrors import not_following

State = MirrorTopic.State
Action = ApprovalRequest.Action

# In the order the pages show them, with their words.
LABELS = {
    "pause": "Pause",
    "resume": "Resume",
    Action.PROMOTE: "Promote",
    Action.FAILOVER: "Fail over",
    Action.REVERSE_AND_START: "Reverse",
    Action.REVERSE_AND_PAUSE: "Reverse, paused",
    Action.TRUNCATE_AND_RESTORE: "Fail back",
    "verify": "Verify",
}


@dataclass(frozen=True)
class Choice:
    """One action on one mirror: available now, or why not (`reason`)."""

    action: str
    reason: str = ""

    @property
    def available(self) -> bool:
        return not self.reason

    @property
    def label(self) -> str:
        return LABELS[self.action]


@dataclass
class Standing:
    """A mirror's actions, and (a stopped topic on a bidirectional link) the other cluster's
    mirror of it, if any: then it is the primary."""

    mirror: MirrorTopic
    choices: list[Choice] = field(default_factory=list)
    mirrored_by: MirrorTopic | None = None

    def __getitem__(self, action: str) -> Choice:
        return {c.action: c for c in self.choices}[action]

    @property
    def can(self) -> dict[str, Choice]:
        """The choices by action, "-" as "_" (for templates: `can.truncate_and_restore`)."""
        return {c.action.replace("-", "_"): c for c in self.choices}

    @property
    def available(self) -> list[Choice]:
        return [c for c in self.choices if c.available]

    @property
    def unavailable(self) -> list[Choice]:
        return [c for c in self.choices if not c.available]

    @property
    def primary(self) -> bool:
        return self.mirror.state == State.STOPPED and self.mirrored_by is not None


def standing(mirror: MirrorTopic) -> Standing:
    """`mirror`'s actions now and where it stands."""
    return standings([mirror])[mirror.pk]


def standings(mirrors: Iterable[MirrorTopic]) -> dict[int, Standing]:
    """Each mirror's standing, by its pk: a few queries for all (the other halves and their
    mirrors of the topics named, read once per link)."""
    mirrors = list(mirrors)
    by_link: dict[int, list[MirrorTopic]] = {}
    for mirror in mirrors:
        by_link.setdefault(mirror.link_id, []).append(mirror)
    found = {}
    for group in by_link.values():
        link = group[0].link
        peer, peer_refusal = _peer(link)
        counterparts = {}
        if peer is not None:
            rows = peer.mirrors.select_related("link", "destination").filter(
                mirror_topic__in=[m.source_topic for m in group]
            )
            counterparts = {m.mirror_topic: m for m in rows}
        for mirror in group:
            counterpart = counterparts.get(mirror.source_topic)
            found[mirror.pk] = _standing(mirror, peer_refusal, counterpart)
    return found


def _peer(link: ClusterLink) -> tuple[ClusterLink | None, str]:
    """The other half and "", or None and why the way back is closed on `link`."""
    try:
        return links.peer_of(link), ""
    except ReplicationError as exc:
        return None, str(exc)


def _standing(mirror: MirrorTopic, peer_refusal: str, counterpart: MirrorTopic | None) -> Standing:
    closed = peer_refusal or reverse.prefix_refusal(mirror.link)
    link_refusal = closed.removesuffix(" Nothing was changed.")
    reverse_refusal = link_refusal or reverse.state_refusal(mirror, counterpart)
    live_counterpart = counterpart if counterpart and counterpart.state != State.STOPPED else None
    return Standing(
        mirror,
        [
            Choice("pause", _switch_refusal(mirror, "pause")),
            Choice("resume", _switch_refusal(mirror, "resume")),
            Choice(Action.PROMOTE, promote.state_refusal(promote.PROMOTE, mirror)),
            Choice(Action.FAILOVER, promote.state_refusal(promote.FAILOVER, mirror)),
            Choice(Action.REVERSE_AND_START, reverse_refusal),
            Choice(Action.REVERSE_AND_PAUSE, reverse_refusal),
            Choice(
                Action.TRUNCATE_AND_RESTORE,
                link_refusal or _fail_back_refusal(mirror, counterpart),
            ),
            Choice("verify", _verify_refusal(mirror)),
        ],
        live_counterpart if mirror.state == State.STOPPED else None,
    )


def _switch_refusal(mirror: MirrorTopic, verb: str) -> str:
    if mirror.state in TRANSITIONS[verb].sources:
        return ""
    if verb == "resume" and mirror.state in FOLLOWING:
        return f"Mirror topic {mirror.mirror_topic!r} is {mirror.state}: it is not paused."
    return not_following(mirror, verb)


def _verify_refusal(mirror: MirrorTopic) -> str:
    if mirror.state in FOLLOWING:
        return ""
    return (
        f"Mirror topic {mirror.mirror_topic!r} is {mirror.state}: only a mirror that follows its "
        "source can be compared with it."
    )


def _fail_back_refusal(mirror: MirrorTopic, counterpart: MirrorTopic | None) -> str:
    """Fail back, on a stopped topic's page, makes its old source (the other cluster's topic
    of the same name) a mirror of it again: truncate-and-restore on the other half."""
    name = mirror.mirror_topic
    if mirror.state != State.STOPPED:
        return (
            f"Mirror topic {name!r} is {mirror.state}: fail back is the way back after a "
            "failover or promote, on the topic that became writable."
        )
    if mirror.source_topic != name:
        return (
            f"Topic {name!r} mirrored {mirror.source_topic!r}: a fail back needs the same name "
            "on both clusters."
        )
    if counterpart is not None and counterpart.state != State.STOPPED:
        since = ""
        if (mirror.stop_report or {}).get("kind") in reverse.KINDS:
            since = " since its reverse"
        elif (counterpart.stop_report or {}).get("kind") == Action.TRUNCATE_AND_RESTORE:
            since = " again since its fail back"
        return (
            f"Topic {name!r} on {counterpart.destination.name} already mirrors this topic over "
            f"link {counterpart.link.name!r}{since}: this topic is the primary, and there is "
            "nothing to fail back. To go back, reverse that mirror from its page (or fail it "
            "over)."
        )
    return restore_plan.standing_refusal(counterpart, mirror)
