"""kafka-replica-status: each replica of the destination's topics, read from the cluster itself;
with --include-linked also each mirror partition's replica over its link (the leader that
fetches it, with its lag from the console: LastCaughtUpLagMs is its lag in time, the age of
the oldest source record it does not hold yet, -1 unknown), and with --include-mirror each mirror
partition's state from the console."""

from __future__ import annotations

import time
from collections.abc import Iterator

from isthmus_cli.common import CliError, KafkaAdminError, Session, names, parser, run

COLUMNS = [
    "Topic",
    "Partition",
    "Replica",
    "IsLeader",
    "IsObserver",
    "IsIsrEligible",
    "IsInIsr",
    "IsCaughtUp",
    "LastCaughtUpLagMs",
    "LastFetchLagMs",
    "LogStartOffset",
    "LogEndOffset",
]
MIRROR_COLUMNS = [
    "LeaderEpoch",
    "MirrorState",
    "MirrorLastFetchTimeMs",
    "MirrorLastFetchHighWatermark",
]


def _arguments(argv):
    p = parser("kafka-replica-status", "Show the replicas of topics on the destination cluster.")
    p.add_argument("--topics", help="topics, comma-separated (default: all)")
    p.add_argument(
        "--include-mirror", action="store_true", help="add each mirror partition's state"
    )
    p.add_argument(
        "--include-linked",
        action="store_true",
        help="add a ClusterLink column and each mirror partition's replica over its link",
    )
    return p.parse_args(argv)


def _bool(value: bool) -> str:
    return str(value).lower()


def _rows(session: Session, topic: str, mirror: dict | None, args) -> Iterator[list[str]]:
    lags = {lag["partition"]: lag for lag in (mirror or {}).get("mirror_lags", [])}
    for p in session.admin.partition_replicas(topic):
        lag = lags.get(p.partition)
        for replica in p.replicas:
            leader = replica == p.leader
            # Apache Kafka has no observers; a leader is caught up by definition, and a
            # follower's fetch lag is not exposed by the Admin API (-1: unknown).
            row = [topic, p.partition, replica, *(["-"] if args.include_linked else [])]
            row += [
                _bool(leader),
                "false",
                "true",
                _bool(replica in p.isr),
                _bool(replica in p.isr),
                0 if leader else -1,
                0 if leader else -1,
                p.log_start_offset,
                p.log_end_offset,
            ]
            yield _cells(row + _mirror_cells(p, mirror, lag, args))
        if args.include_linked and mirror is not None and lag is not None:
            # The replica over the link: the leader fetching from the source, caught up when
            # its lag is 0. As a follower's, its caught-up lag is how long ago it last held
            # every record (the age of the oldest it lacks), its fetch lag the time since the
            # stream last fetched.
            since = lag["time_since_last_fetch_ms"]
            row = [topic, p.partition, p.leader, mirror["link_name"], "true", "false", "true"]
            row += [_bool(lag["lag"] >= 0), _bool(lag["lag"] == 0), lag.get("lag_ms", -1), since]
            row += [p.log_start_offset, p.log_end_offset]
            yield _cells(row + _mirror_cells(p, mirror, lag, args))


def _mirror_cells(p, mirror: dict | None, lag: dict | None, args) -> list:
    if not args.include_mirror:
        return []
    if mirror is None or lag is None:
        return [p.leader_epoch, "-", -1, -1]
    since = lag["time_since_last_fetch_ms"]
    return [
        p.leader_epoch,
        mirror["mirror_status"],
        -1 if since < 0 else int(time.time() * 1000) - since,
        lag["last_source_fetch_offset"],
    ]


def _cells(row: list) -> list[str]:
    return [str(value) for value in row]


def table(rows: list[list[str]], columns: list[str]) -> list[str]:
    """Columns left-aligned, each as wide as its widest cell, one space apart."""
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    return [
        " ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in [columns, *rows]
    ]


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    session = Session(args)
    topics = names(args.topics)
    try:
        existing = session.admin.list_topic_names()
        missing = [t for t in topics if t not in existing]
        if missing:
            raise CliError(f"Topic {', '.join(missing)} does not exist on {args.bootstrap_server}.")
        topics = topics or sorted(t for t in existing if not t.startswith("__"))
        mirrors = {}
        if args.include_mirror or args.include_linked:
            link_of = session.mirror_links()
            mirrors = {t: session.mirror(link_of[t], t) for t in topics if t in link_of}
        rows = [row for topic in topics for row in _rows(session, topic, mirrors.get(topic), args)]
    except KafkaAdminError as exc:
        raise CliError(str(exc)) from exc
    columns = COLUMNS[:3] + (["ClusterLink"] if args.include_linked else []) + COLUMNS[3:]
    columns += MIRROR_COLUMNS if args.include_mirror else []
    print("\n".join(table(rows, columns)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
