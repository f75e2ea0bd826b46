"""kafka-mirrors: create, list, describe, pause and unpause mirror topics, as Confluent's tool
does. The link of a topic named with --topics is found for the user."""

from __future__ import annotations

import sys
from collections import defaultdict
from datetime import datetime

from isthmus_cli.common import (
    CliError,
    Session,
    configs_from,
    names,
    parser,
    run,
)

STOPPING = ("PENDING_STOPPED", "STOPPED")


def _arguments(argv):
    p = parser("kafka-mirrors", "Create, list, describe, pause and unpause mirror topics.")
    action = p.add_mutually_exclusive_group(required=True)
    for flag, text in (
        ("--create", "create a mirror topic"),
        ("--list", "list mirror topics"),
        ("--describe", "describe mirror topics, partition by partition"),
        ("--pause", "stop fetching for mirror topics; they stay read-only"),
        ("--unpause", "fetch again for paused mirror topics"),
        ("--promote", "not offered yet"),
        ("--failover", "not offered yet"),
    ):
        action.add_argument(flag, action="store_true", help=text)
    p.add_argument("--mirror-topic", help="the mirror topic to create")
    p.add_argument("--source-topic", help="its source topic (default: the mirror's name)")
    p.add_argument("--link", help="the link (--create, --list)")
    p.add_argument("--links", help="links to describe, comma-separated")
    p.add_argument("--topics", help="mirror topics, comma-separated")
    p.add_argument("--replication-factor", type=int, help="of the mirror topic")
    p.add_argument("--config", help="topic config overrides: k1=v1,k2=v2")
    p.add_argument("--config-file", help="properties file of topic config overrides")
    p.add_argument("--include-stopped", action="store_true", help="--list also stopped mirrors")
    p.add_argument(
        "--pending-stopped-only", action="store_true", help="--describe only stopping mirrors"
    )
    p.add_argument("--validate-only", action="store_true", help="check only; change nothing")
    args = p.parse_args(argv)
    if args.create and not (args.mirror_topic and args.link):
        p.error("--create needs --mirror-topic and --link")
    if (args.pause or args.unpause) and not args.topics:
        p.error("--pause and --unpause need --topics")
    return args


def create(session: Session, args) -> None:
    configs = configs_from(args.config_file, args.config)
    source = args.source_topic
    if source is None:
        link_configs = session.call("GET", session.link_path(args.link, "configs"))["data"]
        prefix = next((c["value"] for c in link_configs if c["name"] == "cluster.link.prefix"), "")
        source = args.mirror_topic.removeprefix(prefix or "")
    body = {
        "source_topic_name": source,
        "mirror_topic_name": args.mirror_topic,
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }
    if args.replication_factor is not None:
        body["replication_factor"] = args.replication_factor
    session.call(
        "POST", session.link_path(args.link, "mirrors"), body, validate_only=args.validate_only
    )
    if args.validate_only:
        print(f"Creation of mirror topic {args.mirror_topic} successfully validated.")
    else:
        print(f"Created topic {args.mirror_topic}.")


def _mirrors(session: Session, links: list[str]) -> list[dict]:
    if not links:
        return session.call("GET", session.link_path("-", "mirrors"))["data"]
    found = []
    for link in links:
        found += session.call("GET", session.link_path(link, "mirrors"))["data"]
    return found


def _links_of(session: Session, topics: list[str], links: list[str] = ()) -> dict[str, str]:
    """The link of each of `topics`, which must all be mirror topics (of `links`, if given)."""
    link_of = session.mirror_links(links)
    missing = [t for t in topics if t not in link_of]
    if missing:
        where = f"link {', '.join(links)}" if links else "any cluster link"
        raise CliError(f"Topic {', '.join(missing)} is not a mirror topic of {where}.")
    return {t: link_of[t] for t in topics}


def _chosen(session: Session, links: list[str], topics: list[str]) -> list[dict]:
    """The mirrors of `links` (all links if none), only `topics` if given; all must exist."""
    if not topics:
        return _mirrors(session, links)
    return [session.mirror(link, t) for t, link in _links_of(session, topics, links).items()]


def list_mirrors(session: Session, args) -> None:
    for mirror in _mirrors(session, [args.link] if args.link else []):
        if args.include_stopped or mirror["mirror_status"] not in STOPPING:
            print(mirror["mirror_topic_name"])


def _state_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def describe(session: Session, args) -> None:
    for mirror in _chosen(session, names(args.links), names(args.topics)):
        stopping = mirror["mirror_status"] in STOPPING
        if args.pending_stopped_only and not stopping:
            continue
        print(
            f"Topic: {mirror['mirror_topic_name']}  LinkName: {mirror['link_name']}  "
            f"LinkId: {mirror['link_id']}  SourceTopic: {mirror['source_topic_name']}  "
            f"State: {mirror['mirror_status']}  SourceTopicId: {mirror['source_topic_id']}  "
            f"StoppedSequenceNumber: 0  StateTime: {_state_time(mirror['state_time_ms'])}"
        )
        if args.pending_stopped_only:
            continue
        for lag in mirror["mirror_lags"]:
            print(
                f"    Partition: {lag['partition']}  State: {mirror['mirror_status']}  "
                f"DestLogEndOffset: {lag['dest_log_end_offset']}  "
                f"LastFetchSourceHighWatermark: {lag['last_source_fetch_offset']}  "
                f"Lag: {lag['lag']}  TimeSinceLastFetchMs: {lag['time_since_last_fetch_ms']}  "
                f"OffsetMode: {lag['offset_mode']}"
            )
        for problem in mirror["status_errors"]:
            print(f"    Warning: {problem}", file=sys.stderr)


def alter(session: Session, args, action: str, verb: str) -> int:
    """Pause or resume the named mirrors, each on its own link; report each topic."""
    by_link = defaultdict(list)
    for topic, link in _links_of(session, names(args.topics)).items():
        by_link[link].append(topic)
    failed = 0
    for link, link_topics in by_link.items():
        result = session.call(
            "POST",
            session.link_path(link, f"mirrors:{action}"),
            {"mirror_topic_names": link_topics},
            validate_only=args.validate_only,
        )
        for outcome in result["data"]:
            topic = outcome["mirror_topic_name"]
            if outcome["error_code"] is None:
                done = "validated" if args.validate_only else "scheduled"
                print(f"Request for {verb} topic {topic}'s mirror was successfully {done}.")
            else:
                failed += 1
                print(
                    f"Error {verb} topic {topic}'s mirror: {outcome['error_message']}",
                    file=sys.stderr,
                )
    return 1 if failed else 0


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.promote or args.failover:
        raise CliError(
            "Promote and failover are not offered by Isthmus yet: they will come with "
            "approvals. To stop a mirror now, delete its link with --force as an admin."
        )
    session = Session(args)
    if args.create:
        create(session, args)
    elif args.list:
        list_mirrors(session, args)
    elif args.describe:
        describe(session, args)
    elif args.pause:
        return alter(session, args, "pause", "pausing")
    elif args.unpause:
        return alter(session, args, "resume", "resuming")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
