"""Which clusters do not answer, and which links that stops, from what the console already
knows: the beat's probe of every registered cluster (`kafka.reachability`, every 30 s) and each
link's availability check of its source (`syncers.check_source`, with the link's own
credentials). No cluster is asked here: a page or a scrape that shows it never waits on one
that is down."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from replication.kafka import reachability
from replication.models import ClusterLink, KafkaCluster


@dataclass
class Cluster:
    """A cluster the console knows: registered (by its name), or a link's source that is not
    (by its cluster id)."""

    name: str
    reachable: bool | None = None  # None: not probed yet, and no link checks it
    why: str = ""
    since: datetime | None = None  # when it stopped answering, where the probe saw it
    links_from: list[str] = field(default_factory=list)
    links_to: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Survey:
    clusters: list[Cluster]  # every one known, by name
    # per link pk, what of its ends does not answer, in words ("source 'a' does not answer")
    marks: dict[int, list[str]]

    @property
    def unreachable(self) -> list[Cluster]:
        return [c for c in self.clusters if c.reachable is False]


def survey(links: list[ClusterLink]) -> Survey:
    """The clusters of the console and of `links`, each as last seen, and the links' marks:
    one Redis read and one query, whatever the number of links."""
    readings = reachability.latest()
    known: dict[str, Cluster] = {}
    by_id: dict[str, Cluster] = {}
    for registered in KafkaCluster.objects.order_by("name"):
        cluster = known[registered.name] = by_id[registered.cluster_id] = Cluster(registered.name)
        if (reading := readings.get(registered.cluster_id)) is not None:
            _seen(cluster, reading)
    ends = {}
    for link in links:
        source = by_id.setdefault(link.source_cluster_id, Cluster(link.source_cluster_id))
        known.setdefault(source.name, source)
        destination = known[link.destination.name]
        if (failing := _failing_check(link)) and source.reachable is not False:
            source.reachable, source.why = False, failing
        elif source.reachable is None and link.availability_checked_at is not None:
            source.reachable = True  # the link's last check passed
        source.links_from.append(link.name)
        destination.links_to.append(link.name)
        ends[link.pk] = (("source", source), ("destination", destination))
    # Once every link has had its say: one link's failing check marks its source's other links.
    marks = {
        pk: [f"{end} '{c.name}' does not answer" for end, c in pair if c.reachable is False]
        for pk, pair in ends.items()
    }
    return Survey(sorted(known.values(), key=lambda c: c.name), marks)


def _seen(cluster: Cluster, reading: reachability.Reading) -> None:
    cluster.reachable = reading.reachable
    if not reading.reachable:
        cluster.why = reading.error
        cluster.since = datetime.fromtimestamp(reading.since, UTC)


def _failing_check(link: ClusterLink) -> str:
    """What the link's availability check says of its source when the last checks failed ("":
    the last passed). A paused link is not checked: what it last found is no news."""
    if link.state == ClusterLink.State.UNAVAILABLE:
        return link.error_message or "The link's availability check cannot reach its source."
    if link.state == ClusterLink.State.PAUSED or not link.availability_failures:
        return ""
    threshold = link.int_config("availability.check.consecutive.failure.threshold")
    return (
        f"Link {link.name} could not reach it in its last {link.availability_failures} "
        f"availability check(s); after {threshold} in a row the link is UNAVAILABLE."
    )
