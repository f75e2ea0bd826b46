"""What the console's home page shows: each link with its mirrors counted by state, its worst
lag and its throughput; the mirrors in trouble first; requests waiting for approval; recent
audit events. Read from the database and from what the links' streams last reported in Redis,
never from the clusters, so the page is quick however many links there are and whichever
cluster is down (the clusters' reachability is loaded into the page separately)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .approvals import list_requests
from .mirror_states import FOLLOWING
from .models import ApprovalRequest, AuditEvent, ClusterLink, KafkaCluster, MirrorTopic
from .streams import StreamStatus, reported_lags, status

State = MirrorTopic.State
TROUBLE = (State.FAILED, State.SOURCE_UNAVAILABLE)


@dataclass(frozen=True)
class Lag:
    """The largest lag the stream last reported among a link's mirrors, and where."""

    records: int
    mirror: str
    partition: int


@dataclass(frozen=True)
class LinkSummary:
    link: ClusterLink
    stream: StreamStatus
    mirrors_by_state: dict[str, int]
    worst_lag: Lag | None  # None: no mirror reported yet
    troubled: int  # mirrors FAILED, SOURCE_UNAVAILABLE or with an error

    @property
    def mirrors(self) -> int:
        return sum(self.mirrors_by_state.values())


@dataclass(frozen=True)
class Overview:
    clusters: int
    links: list[LinkSummary]
    troubled_mirrors: list[MirrorTopic]
    pending_requests: list[ApprovalRequest]
    recent_events: list[AuditEvent]
    mirrors_by_state: dict[str, int] = field(default_factory=dict)

    @property
    def mirrors(self) -> int:
        return sum(self.mirrors_by_state.values())

    @property
    def records_per_sec(self) -> float:
        return round(sum(s.stream.records_per_sec for s in self.links), 1)

    @property
    def worst_lag(self) -> tuple[LinkSummary, Lag] | None:
        lags = [(s, s.worst_lag) for s in self.links if s.worst_lag is not None]
        return max(lags, key=lambda pair: pair[1].records, default=None)


@dataclass(frozen=True)
class MirrorLag:
    """A mirror's lag as its link's stream last reported it."""

    total: int
    largest: int


def link_summaries(links: list[ClusterLink] | None = None) -> list[LinkSummary]:
    """Each link (all, by name, when None) with its mirrors by state, worst lag and stream."""
    if links is None:
        links = list(ClusterLink.objects.select_related("destination").order_by("name"))
    by_link: dict[int, list[MirrorTopic]] = {link.pk: [] for link in links}
    for mirror in MirrorTopic.objects.filter(link__in=links):
        by_link[mirror.link_id].append(mirror)
    return [_summary(link, by_link[link.pk]) for link in links]


def mirror_lags(mirrors: list[MirrorTopic]) -> dict[int, MirrorLag]:
    """Per mirror (by pk) that its stream has reported: its total and largest partition lag.
    One Redis read per link; a following mirror left out has not been fetched yet."""
    found = {}
    reported: dict[int, dict] = {}
    for mirror in mirrors:
        if mirror.state not in FOLLOWING:
            continue
        if mirror.link_id not in reported:
            reported[mirror.link_id] = reported_lags(mirror.link)
        partitions = reported[mirror.link_id].get(mirror.mirror_topic)
        if partitions:
            found[mirror.pk] = MirrorLag(sum(partitions.values()), max(partitions.values()))
    return found


def overview(events: int = 10) -> Overview:
    summaries = link_summaries()
    mirrors = list(MirrorTopic.objects.select_related("link", "destination"))
    # Links in trouble first (a FAILED link, or troubled mirrors), then by name.
    summaries.sort(key=lambda s: (s.link.state != ClusterLink.State.FAILED, not s.troubled))
    troubled = sorted(
        (m for m in mirrors if _troubled(m)),
        key=lambda m: (m.state != State.FAILED, m.state_time),
    )
    return Overview(
        clusters=KafkaCluster.objects.count(),
        links=summaries,
        troubled_mirrors=troubled,
        pending_requests=list(list_requests(states=[ApprovalRequest.State.PENDING])[:10]),
        recent_events=list(AuditEvent.objects.order_by("-at", "-pk")[:events]),
        mirrors_by_state=dict(Counter(m.state for m in mirrors)),
    )


def _summary(link: ClusterLink, mirrors: list[MirrorTopic]) -> LinkSummary:
    return LinkSummary(
        link=link,
        stream=status(link),
        mirrors_by_state=dict(Counter(m.state for m in mirrors)),
        worst_lag=_worst_lag(link, [m for m in mirrors if m.state in FOLLOWING]),
        troubled=sum(_troubled(m) for m in mirrors),
    )


def _troubled(mirror: MirrorTopic) -> bool:
    return mirror.state in TROUBLE or bool(mirror.error_message or mirror.action_error)


def _worst_lag(link: ClusterLink, following: list[MirrorTopic]) -> Lag | None:
    """The largest lag among the mirrors, as the stream last reported it."""
    if not following:
        return None
    lags = reported_lags(link)
    found = [
        Lag(lag, mirror.mirror_topic, partition)
        for mirror in following
        for partition, lag in lags.get(mirror.mirror_topic, {}).items()
    ]
    return max(found, key=lambda lag: lag.records, default=None)
