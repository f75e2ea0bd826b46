"""kafka-mirrors: create, list, describe, pause and unpause mirror topics, as Confluent's tool
does; and (Isthmus's own) verify them against their sources. The link of a topic named with
--topics is found for the user."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from isthmus_cli.approval_requests import requests
from isthmus_cli.common import (
    CliError,
    Session,
    configs_from,
    names,
    parser,
    print_request,
    run,
)

# As the server's mirror state machine groups them (replication.states.mirror_states.STOPPING); the
# tools are a client and import nothing of the server.
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
        ("--promote", "stop mirroring once caught up: the topic becomes writable"),
        ("--failover", "stop mirroring at once, whatever the lag or the source's health"),
        (
            "--reverse-and-start",
            "bidirectional link: make the mirror writable and its source a mirror of it",
        ),
        ("--reverse-and-pause", "the same, the source's new mirror left paused"),
        (
            "--verify",
            "compare mirror topics with their sources record by record (partition, offset, "
            "key, value, headers, timestamp), showing progress; exit status 1 if any differs",
        ),
        (
            "--truncate-and-restore",
            "after a failover, on the old primary: set its divergent records aside and make "
            "its topics mirrors of the promoted ones (with --link)",
        ),
    ):
        action.add_argument(flag, action="store_true", help=text)
    for flag, text in (
        ("--approve", "approve request ID (an approver)"),
        ("--reject", "reject request ID, with --reason (an approver)"),
        ("--withdraw", "withdraw your request ID"),
        ("--describe-request", "show request ID"),
    ):
        action.add_argument(flag, metavar="ID", help=text)
    action.add_argument("--list-requests", action="store_true", help="list open approval requests")
    p.add_argument("--reason", default="", help="why (a stop, a reverse, --reject)")
    p.add_argument(
        "--gateway",
        default="",
        help="a gateway whose clients follow the stop or reverse to the mirror's cluster (admin)",
    )
    p.add_argument(
        "--break-glass", action="store_true", help="--failover at once, without approval (admin)"
    )
    p.add_argument("--mirror-topic", help="the mirror topic to create")
    p.add_argument("--source-topic", help="its source topic (default: the mirror's name)")
    p.add_argument("--link", help="the link (--create, --list, --describe)")
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
    p.add_argument(
        "--from",
        dest="from_offset",
        type=int,
        help="--verify from this source offset (default: each partition's log start)",
    )
    p.add_argument(
        "--to",
        dest="to_offset",
        type=int,
        help="--verify up to, not including, this source "
        "offset (default: what the mirror has copied)",
    )
    p.add_argument(
        "--include-actions",
        action="store_true",
        help="--describe: also the actions each mirror offers now, why the others cannot run, "
        "and, for a stopped topic that is the primary, where its mirror is",
    )
    p.add_argument(
        "--include-verification",
        action="store_true",
        help="--describe: also what the background verification found",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="--verify: start the verifications and say where to follow them, without waiting",
    )
    args = p.parse_args(argv)
    if args.create and not (args.mirror_topic and args.link):
        p.error("--create needs --mirror-topic and --link")
    if (args.pause or args.unpause or args.verify or _stopping(args)) and not args.topics:
        p.error("--pause, --unpause, --verify, --promote, --failover and --reverse-* need --topics")
    if (args.from_offset is not None or args.to_offset is not None) and not args.verify:
        p.error("--from and --to go with --verify")
    if args.truncate_and_restore and not args.link:
        p.error("--truncate-and-restore needs --link: its topics are not mirrors yet")
    return args


# The actions that stop a mirror (subject to approval): the flag's name -> the API's action,
# and how the request is named while it waits.
STOPS = {
    "promote": ("promote", "Promoting"),
    "failover": ("failover", "Failing over"),
    "reverse_and_start": ("reverse-and-start-mirror", "Reversing"),
    "reverse_and_pause": ("reverse-and-pause-mirror", "Reversing"),
    "truncate_and_restore": ("truncate-and-restore", "Restoring"),
}


def _stopping(args) -> str | None:
    """The stopping action asked for, if any (its flag's name)."""
    return next((flag for flag in STOPS if getattr(args, flag)), None)


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


def _links_of(session: Session, topics: list[str], links: Sequence[str] = ()) -> dict[str, str]:
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
    links = names(args.links) + ([args.link] if args.link else [])  # as the seed's --link
    for mirror in _chosen(session, links, names(args.topics)):
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
        if args.include_actions:
            _print_standing(mirror)
        for lag in mirror["mirror_lags"]:
            print(
                f"    Partition: {lag['partition']}  State: {mirror['mirror_status']}  "
                f"DestLogEndOffset: {lag['dest_log_end_offset']}  "
                f"LastFetchSourceHighWatermark: {lag['last_source_fetch_offset']}  "
                f"Lag: {lag['lag']}  TimeSinceLastFetchMs: {lag['time_since_last_fetch_ms']}  "
                f"OffsetMode: {lag['offset_mode']}  LagMs: {lag.get('lag_ms', -1)}"
            )
        if args.include_verification:
            print(f"    Verification: {mirror['verified'] or 'not compared with its source yet'}")
            for difference in mirror["differences"]:
                print(f"    Differs: {difference}")
            if mirror["records_lost"]:
                print(f"    Records lost: {mirror['records_lost']}")
        for problem in mirror["status_errors"]:
            print(f"    Warning: {problem}", file=sys.stderr)


def _print_standing(mirror: dict) -> None:
    """Isthmus: where a primary's mirror is, the actions that can run now, and why the others
    cannot (the console offers the same)."""
    other = mirror.get("mirrored_by")
    if other:
        print(
            f"    Primary: mirrored by {other['mirror_topic_name']} on {other['cluster_name']} "
            f"over link {other['link_name']} ({other['mirror_status']})"
        )
    actions = mirror.get("actions", [])
    available = [a["action"] for a in actions if a["available"]]
    print(f"    Actions: {', '.join(available) or 'none now'}")
    for action in actions:
        if not action["available"]:
            print(f"    Not now: {action['action']}: {action['reason']}")


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


def stop(session: Session, args, flag: str) -> int:
    """Promote, fail over, reverse or restore the named mirrors, link by link, printing what
    Confluent's tool prints; an action that needs approval prints the request to follow."""
    action, verb = STOPS[flag]
    by_link = defaultdict(list)
    if flag == "truncate_and_restore":  # the old primary's topics, not mirrors yet
        by_link[args.link] = names(args.topics)
    else:
        for topic, link in _links_of(session, names(args.topics)).items():
            by_link[link].append(topic)
    failed = 0
    for link, link_topics in by_link.items():
        listed = f"[{', '.join(link_topics)}]"
        print(f"Calculating max offset and ms lag for mirror topics: {listed}")
        answer = session.call(
            "POST",
            session.link_path(link, f"mirrors:{action}"),
            {
                "mirror_topic_names": link_topics,
                "reason": args.reason,
                "break_glass": args.break_glass,
                **({"gateway": args.gateway} if args.gateway else {}),
            },
            validate_only=args.validate_only,
            **(
                {"include_partition_level_truncation_data": True}
                if flag == "truncate_and_restore"
                else {}
            ),
        )
        print(f"Finished calculating max offset lag and max lag ms for mirror topics: {listed}")
        if answer["approval_request"]:
            print_request(answer["approval_request"], f"{verb} {', '.join(link_topics)}")
            continue
        failed += sum(not _stop_outcome(outcome, args.validate_only) for outcome in answer["data"])
    if not args.validate_only and not failed:
        print(
            "Please use the describe command with the --pending-stopped-only option to "
            "monitor progress."
        )
    return 1 if failed else 0


def _ms(lag_ms: int) -> str:
    """A partition's lag in time as the stop lines print it."""
    return "ms unknown" if lag_ms < 0 else f"{lag_ms} ms"


def _stop_outcome(outcome: dict, validate_only: bool) -> bool:
    """Print one topic's outcome as Confluent's tool does; returns whether it went through."""
    topic = outcome["mirror_topic_name"]
    if outcome["error_code"] is not None:
        print(f"Error stopping topic {topic}'s mirror: {outcome['error_message']}", file=sys.stderr)
        return False
    if validate_only:
        lags = "; ".join(
            f"{lag['partition']}: {lag['lag']} records, {_ms(lag.get('lag_ms', -1))}"
            for lag in outcome["mirror_lags"]
        )
        shown = f" (lag per partition {lags})" if lags else ""
        print(f"Request for stopping topic {topic}'s mirror was successfully validated{shown}.")
    else:
        print(f"Request for stopping topic {topic}'s mirror was successfully scheduled.")
    if outcome.get("messages_truncated") is not None:  # a truncate-and-restore
        where = outcome["quarantine_topic_name"] or "a quarantine topic"
        done = "would be truncated and kept in" if validate_only else "truncated, kept in"
        print(f"Topic {topic}: {outcome['messages_truncated']} messages {done} {where}.")
        for p in outcome.get("partition_level_truncation_data") or []:
            print(
                f"  Partition {p['partition_id']}: truncated to offset "
                f"{p['offset_truncated_to']}, {p['messages_truncated']} set aside, "
                f"{p['records_to_copy']} to copy from the promoted topic."
            )
    return True


POLL_S = 1.0


def verify(session: Session, args) -> int:
    """Start a verification of each topic, then follow them, printing progress, until each is
    done; then what each found. Exit status 1 if any mirror differs, 2 if any could not run."""
    by_link = defaultdict(list)
    for topic, link in _links_of(session, names(args.topics)).items():
        by_link[link].append(topic)
    running = {}  # topic -> its verification's path
    for link, link_topics in by_link.items():
        body = {
            "mirror_topic_names": link_topics,
            "from_offset": args.from_offset,
            "to_offset": args.to_offset,
        }
        for v in session.call("POST", session.link_path(link, "mirrors:verify"), body)["data"]:
            topic = v["mirror_topic_name"]
            running[topic] = session.link_path(
                link, "mirrors", topic, "verifications", v["verification_id"]
            )
    if args.no_wait:
        for topic, path in running.items():
            print(
                f"Verification of {topic} started: its progress and result at {path} (the API), "
                "and on the mirror topic's page in the console."
            )
        return 0
    done = _follow(session, running)
    status = 0
    for topic, found in done.items():
        print(f"Topic: {topic}  State: {found['state']}  {found['outcome']}")
        for difference in found["differences"]:
            print(f"    Differs: {difference}")
        for note in found["notes"]:
            print(f"    Not compared: {note}")
        status = max(status, {"DIFFERENT": 1, "FAILED": 2}.get(found["state"], 0))
    return status


def _follow(session: Session, running: dict[str, str]) -> dict[str, dict]:
    """Read each verification until it ends, printing its progress when it moved."""
    shown: dict[str, str] = {}
    done: dict[str, dict] = {}
    while True:
        for topic, path in running.items():
            if topic in done:
                continue
            found = session.call("GET", path)
            line = f"Verifying {topic}: {found['compared']} of {found['total']} offsets compared"
            if line != shown.get(topic):
                print(line, flush=True)
                shown[topic] = line
            if found["state"] != "RUNNING":
                done[topic] = found
        if len(done) == len(running):
            return {topic: done[topic] for topic in running}
        time.sleep(POLL_S)


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
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
    elif flag := _stopping(args):
        return stop(session, args, flag)
    elif args.verify:
        return verify(session, args)
    else:
        requests(session, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
