"""What the console's home page shows: each link with its mirrors counted by state, its worst
lag and its throughput; the mirrors in trouble first; requests waiting for approval; recent
audit events; the clusters that do not answer, and the links they stop. Read from the database,
from what the links' streams last reported, from each mirror's latest lag reading
(`lag.latest`) and from the clusters' latest reachability (`unreachable.survey`) in Redis, never
from the clusters, so the page is quick however many links there are and whichever cluster is
down."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Case, Count, Q, When

from replication.actions.approvals import list_requests
from replication.engine.status import StreamStatus, status
from replication.models import (
    ApprovalRequest,
    AuditEvent,
    ClusterLink,
    KafkaCluster,
    MergeFlow,
    MirrorTopic,
    is_canary,
)
from replication.observe import lag, lag_times, mirror_differences, rpo
from replication.overview.unreachable import Cluster, survey
from replication.states.mirror_states import FOLLOWING
from replication.topics import merge_flows
from replication.topics.mirrors import records_lost, source_missing

State = MirrorTopic.State
TROUBLE = (State.FAILED, State.SOURCE_UNAVAILABLE)


@dataclass(frozen=True)
class Lag:
    """The largest lag last read among a link's mirrors, and where."""

    records: int
    mirror: str
    partition: int


@dataclass(frozen=True)
class LinkSummary:
    link: ClusterLink
    stream: StreamStatus
    mirrors_by_state: dict[str, int]
    worst_lag: Lag | None  # None: no mirror read yet
    troubled: int  # mirrors FAILED, SOURCE_UNAVAILABLE or with an error
    # The largest lag in time of its mirrors (ms, -1 unknown), and those over its RPO target.
    worst_lag_ms: int = -1
    over_rpo: dict[str, int] = field(default_factory=dict)
    unreachable: list[str] = field(default_factory=list)  # its ends that do not answer, in words


@dataclass(frozen=True)
class Overview:
    clusters: int
    links: list[LinkSummary]
    troubled_mirrors: list[MirrorTopic]
    pending_requests: list[ApprovalRequest]
    recent_events: list[AuditEvent]
    mirrors_by_state: dict[str, int] = field(default_factory=dict)
    unreachable: list[Cluster] = field(default_factory=list)

    @property
    def mirrors(self) -> int:
        return sum(self.mirrors_by_state.values())

    @property
    def records_per_sec(self) -> float:
        return round(sum(s.stream.records_per_sec for s in self.links), 1)

    @property
    def worst_lag_ms(self) -> int:
        return lag_times.largest(s.worst_lag_ms for s in self.links)

    @property
    def worst_lag(self) -> tuple[LinkSummary, Lag] | None:
        lags = [(s, s.worst_lag) for s in self.links if s.worst_lag is not None]
        return max(lags, key=lambda pair: pair[1].records, default=None)


@dataclass(frozen=True)
class MirrorLag:
    """A mirror's lag as last read."""

    total: int
    largest: int
    max_lag_ms: int = -1  # its largest lag in time; -1 unknown


def link_summaries(
    links: list[ClusterLink] | None = None, marks: dict[int, list[str]] | None = None
) -> list[LinkSummary]:
    """Each link (all, by name, when None) with its mirrors by state, worst lag, stream and
    the ends that do not answer (`marks`, from `unreachable.survey`, surveyed here when None):
    one query for the counts, one for the mirrors that follow (their lag), one for the links
    with merge flows (theirs, from each such link's heartbeat), whatever the number of mirrors."""
    if links is None:
        links = _all_links()
    if marks is None:
        marks = survey(links).marks
    mirrors = MirrorTopic.objects.filter(link__in=links)
    counts: dict[int, dict[str, int]] = {link.pk: {} for link in links}
    for row in mirrors.values("link_id", "state").annotate(n=Count("pk")).order_by("state"):
        counts[row["link_id"]][row["state"]] = row["n"]
    following: dict[int, list[str]] = {link.pk: [] for link in links}
    for link_id, name in mirrors.filter(state__in=FOLLOWING).values_list("link_id", "mirror_topic"):
        following[link_id].append(name)
    flowing = set(MergeFlow.objects.filter(link__in=links).values_list("link_id", flat=True))
    troubled = dict(
        mirrors.filter(_TROUBLED)
        .values("link_id")
        .annotate(n=Count("pk"))
        .values_list("link_id", "n")
    )
    readings = {link.pk: lag.latest(link) for link in links if following[link.pk]}
    times = {  # a drill's canary is no one's data: it breaches no RPO target
        link.pk: {
            m: r.max_lag_ms for m, r in readings.get(link.pk, {}).items() if not is_canary(link, m)
        }
        for link in links
    }
    return [
        LinkSummary(
            link=link,
            stream=status(link),
            mirrors_by_state=counts[link.pk],
            worst_lag=_worst_lag(
                link, following[link.pk], readings.get(link.pk, {}), link.pk in flowing
            ),
            troubled=troubled.get(link.pk, 0),
            worst_lag_ms=lag_times.largest(times[link.pk].values()),
            over_rpo=rpo.over_target(link, times[link.pk]),
            unreachable=marks.get(link.pk, []),
        )
        for link in links
    ]


def mirror_lags(mirrors: list[MirrorTopic]) -> dict[int, MirrorLag]:
    """Per mirror (by pk) that has been read: its total and largest partition lag. One Redis
    read per link; a mirror left out has not been read yet."""
    found = {}
    readings: dict[int, dict[str, lag.Reading]] = {}
    for mirror in mirrors:
        if mirror.state not in FOLLOWING:
            continue
        if mirror.link_id not in readings:
            readings[mirror.link_id] = lag.latest(mirror.link)
        reading = readings[mirror.link_id].get(mirror.mirror_topic)
        if reading is not None and (largest := reading.largest) is not None:
            found[mirror.pk] = MirrorLag(reading.total, largest[0], reading.max_lag_ms)
    return found


def overview(events: int = 10, troubled: int = 50) -> Overview:
    """The home page's numbers; at most `troubled` of the mirrors in trouble are listed."""
    links = _all_links()
    reached = survey(links)
    summaries = link_summaries(links, reached.marks)
    # Links in trouble first (a FAILED link, an end that does not answer, troubled mirrors),
    # then by name.
    summaries.sort(
        key=lambda s: (
            s.link.state != ClusterLink.State.FAILED and not s.unreachable,
            not s.troubled,
        )
    )
    # A mirror whose link cannot reach one of its clusters is not copying: in trouble too
    # (not one promoted, which no longer needs its link).
    cut_off = [pk for pk, marks in reached.marks.items() if marks]
    cut_off_q = Q(link__in=cut_off) & ~Q(state=State.STOPPED)
    by_state = MirrorTopic.objects.values("state").annotate(n=Count("pk")).order_by("state")
    in_trouble = list(
        MirrorTopic.objects.filter(_TROUBLED | cut_off_q)
        .select_related("link", "destination")
        .order_by(Case(When(state=State.FAILED, then=0), default=1), "state_time")[:troubled]
    )
    for mirror in in_trouble:  # what is wrong, in words
        mirror.trouble = (
            mirror.action_error
            or mirror.error_message
            or source_missing(mirror)
            or records_lost(mirror)
            or mirror_differences.trouble(mirror)
            or _cut_off(reached.marks.get(mirror.link_id))
            or "The link cannot reach the source cluster."
        )
    in_trouble += _over_rpo(summaries, {m.pk for m in in_trouble})[: troubled - len(in_trouble)]
    return Overview(
        clusters=KafkaCluster.objects.count(),
        links=summaries,
        troubled_mirrors=in_trouble,
        pending_requests=list(list_requests(states=[ApprovalRequest.State.PENDING])[:10]),
        recent_events=list(AuditEvent.objects.order_by("-at", "-pk")[:events]),
        mirrors_by_state={row["state"]: row["n"] for row in by_state},
        unreachable=reached.unreachable,
    )


def _over_rpo(summaries: list[LinkSummary], listed: set[int]) -> list[MirrorTopic]:
    """The mirrors further behind in time than their link's RPO target, not listed yet, each
    with what is wrong in words."""
    behind = {(s.link.pk, m): ms for s in summaries for m, ms in s.over_rpo.items()}
    if not behind:
        return []
    links = {pk for pk, _ in behind}
    found = []
    for mirror in (
        MirrorTopic.objects.filter(link__in=links, mirror_topic__in={m for _, m in behind})
        .exclude(pk__in=listed)
        .select_related("link", "destination")
        .order_by("mirror_topic")
    ):
        ms = behind.get((mirror.link_id, mirror.mirror_topic))
        if ms is not None:
            mirror.trouble = (
                f"{rpo.seconds(ms)} behind its source, over the link's RPO target of "
                f"{mirror.link.rpo_target_seconds} s."
            )
            found.append(mirror)
    return found


def _all_links() -> list[ClusterLink]:
    return list(ClusterLink.objects.select_related("destination").order_by("name"))


def _cut_off(marks: list[str] | None) -> str:
    """What stops a mirror's link, in words ("": nothing of its clusters)."""
    if not marks:
        return ""
    said = " and ".join(marks)
    return f"Not copying: the link's {said}."


# A mirror in trouble: FAILED, its source unreachable or its source topic gone, no longer an
# exact copy, or with an error to show.
_TROUBLED = (
    Q(state__in=TROUBLE)
    | Q(source_missing_since__isnull=False)
    | ~Q(records_lost={})
    | Q(differing_records__gt=0)
    | ~Q(error_message="")
    | ~Q(action_error="")
)


def _worst_lag(
    link: ClusterLink, following: list[str], readings: dict[str, lag.Reading], flows: bool
) -> Lag | None:
    """The largest lag among the mirrors named and the link's merge flows, as last read."""
    found = [
        Lag(largest[0], mirror, largest[1])
        for mirror in following
        if (reading := readings.get(mirror)) is not None
        and (largest := reading.largest) is not None
    ]
    if flows:
        found += [
            Lag(p["lag"], f"flow {name}", partition)
            for name, status in merge_flows.statuses(link).items()
            for partition, p in status.partitions.items()
        ]
    return max(found, key=lambda worst: worst.records, default=None)
