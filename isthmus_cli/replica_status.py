"""kafka-replica-status: each replica of the destination's topics, read from the cluster itself,
and with --include-mirror each mirror partition's state from the console."""

from __future__ import annotations

import time

from isthmus_cli.common import CliError, Session, names, parser, run
from isthmus_cli.kafka import KafkaClusterError

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
    return p.parse_args(argv)


def _bool(value: bool) -> str:
    return str(value).lower()


def _rows(session: Session, topic: str, mirror: dict | None, include_mirror: bool):
    lags = {lag["partition"]: lag for lag in (mirror or {}).get("mirror_lags", [])}
    for p in session.admin.partition_replicas(topic):
        for replica in p.replicas:
            leader = replica == p.leader
            # Apache Kafka has no observers; a leader is caught up by definition, and a
            # follower's fetch lag is not exposed by the Admin API (-1: unknown).
            row = [
                topic,
                p.partition,
                replica,
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
            if include_mirror:
                lag = lags.get(p.partition)
                if mirror is None or lag is None:
                    row += [p.leader_epoch, "-", -1, -1]
                else:
                    since = lag["time_since_last_fetch_ms"]
                    row += [
                        p.leader_epoch,
                        mirror["mirror_status"],
                        -1 if since < 0 else int(time.time() * 1000) - since,
                        lag["last_source_fetch_offset"],
                    ]
            yield [str(value) for value in row]


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
        if args.include_mirror:
            link_of = session.mirror_links()
            mirrors = {t: session.mirror(link_of[t], t) for t in topics if t in link_of}
        rows = [
            row
            for topic in topics
            for row in _rows(session, topic, mirrors.get(topic), args.include_mirror)
        ]
    except KafkaClusterError as exc:
        raise CliError(str(exc)) from exc
    columns = COLUMNS + (MIRROR_COLUMNS if args.include_mirror else [])
    print("\n".join(table(rows, columns)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
