"""kafka-merge-flows: Isthmus's own tool (Confluent has none) for merge flows: a source topic
copied over a link into an ordinary, writable topic of any name, exactly once, with its
origin in each record's `isthmus.origin` header. Offsets are not preserved."""

from __future__ import annotations

from isthmus_cli.common import Session, inert_answer, parser, print_request, read_text, run

ACTIONS = ("create", "list", "describe", "pause", "resume", "delete")


def _arguments(argv):
    p = parser(
        "kafka-merge-flows",
        "Create, list, describe, pause, resume and delete merge flows: copies of a source "
        "topic into an ordinary topic of any name (offsets not preserved).",
    )
    action = p.add_mutually_exclusive_group(required=True)
    for name in ACTIONS:
        action.add_argument(f"--{name}", action="store_true", help=f"{name} merge flows")
    action.add_argument(
        "--import-replicator",
        metavar="FILE",
        help="create the merge flows of a Replicator connector's configuration (Connect's JSON "
        "or a properties file); with --validate-only, show them only",
    )
    p.add_argument("--link", help="the link the flow copies over")
    p.add_argument("--flow", help="the flow's name (--create: default <link>.<source topic>)")
    p.add_argument("--source-topic", help="--create: the topic on the link's source")
    p.add_argument(
        "--destination-topic",
        help="--create: the topic to copy into (default: the source topic's name; made when "
        "it does not exist)",
    )
    p.add_argument(
        "--partition-mapping",
        choices=("one-to-one", "by-key"),
        help="--create: default one-to-one when the partition counts are equal, else by-key",
    )
    p.add_argument("--validate-only", action="store_true", help="check only; change nothing")
    p.add_argument(
        "--reason", default="", help="why (--create, --delete): approvers and the audit read it"
    )
    args = p.parse_args(argv)
    if args.import_replicator:
        return "import", args
    chosen = next(name for name in ACTIONS if getattr(args, name))
    if chosen != "list" and not args.link:
        p.error(f"--{chosen} needs --link")
    if chosen == "create" and not args.source_topic:
        p.error("--create needs --source-topic")
    if chosen in ("describe", "pause", "resume", "delete") and not args.flow:
        p.error(f"--{chosen} needs --flow")
    return chosen, args


def describe(flow: dict) -> None:
    flow = inert_answer(flow)
    print(
        f"Flow: {flow['flow_name']}\tLink: {flow['link_name']}\t"
        f"SourceTopic: {flow['source_topic_name']}\t"
        f"DestinationTopic: {flow['destination_topic_name']}\t"
        f"Mapping: {flow['partition_mapping']}\tState: {flow['state']}\t"
        f"Copied: {flow['records_copied']}\tSkipped: {flow['records_skipped']}\t"
        f"Lag: {flow['lag']}\tOffsetsPreserved: false"
    )
    if flow["error_message"]:
        print(f"\tError: {flow['error_message']}")
    for p in flow["partitions"]:
        print(
            f"\tPartition: {p['partition_id']}\tNextSourceOffset: {p['next_source_offset']}\t"
            f"SourceEndOffset: {p['source_end_offset']}\tLag: {p['lag']}"
        )
    offsets = flow["consumer_offsets"]
    if offsets["reason"]:
        print(f"\tConsumerOffsets: not synced: {offsets['reason']}")
    elif not offsets["sync_enabled"]:
        print("\tConsumerOffsets: off (the link's consumer.offset.sync.enable)")
    for g in offsets["groups"]:
        places = ",".join(f"{p}:{o}" for p, o in g["offsets"].items())
        print(
            f"\tGroup: {g['group_name']}\tDestinationGroup: {g['destination_group_name']}\t"
            f"State: {g['state']}\tOffsets: {places or '-'}\tMayRepeat: {g['may_repeat']}"
            + (f"\tReason: {g['reason']}" if g["reason"] else "")
        )


def import_replicator(session: Session, args) -> bool:
    """Show (or create) the flows; whether every one that was tried was made."""
    text = read_text(args.import_replicator, "Replicator configuration")
    answer = inert_answer(
        session.call(
            "POST",
            f"/clusters/{session.cluster_id}/flows:import-replicator",
            {"configuration": text},
            validate_only=args.validate_only,
        )
    )
    print(f"Replicator connector '{answer['connector']}' over link '{answer['link_name']}':")
    for flow in answer["flows"]:
        what = f"{flow['source_topic_name']} into {flow['destination_topic_name']}"
        if flow["exists"]:
            print(f"\t{what}: exists already")
        elif flow["error_message"]:
            print(f"\t{what}: not created: {flow['error_message']}")
        elif flow["approval_request_id"] is not None:
            print(f"\t{what}: waits for approval (request {flow['approval_request_id']})")
        else:
            print(f"\t{what}: {'created' if flow['created'] else 'would be created'}")
    for note in answer["notes"]:
        print(f"Note: {note}")
    return not any(flow["error_message"] for flow in answer["flows"])


def create(session: Session, args) -> None:
    flow = session.call(
        "POST",
        session.link_path(args.link, "flows"),
        {
            "source_topic_name": args.source_topic,
            "destination_topic_name": args.destination_topic,
            "flow_name": args.flow,
            "partition_mapping": args.partition_mapping,
            "reason": args.reason,
        },
        validate_only=args.validate_only,
    )
    if flow and flow.get("approval_request"):
        print_request(flow["approval_request"], f"Creating merge flow from '{args.source_topic}'")
        return
    if args.validate_only:
        print("Merge flow creation successfully validated.")
        return
    print(
        f"Merge flow '{flow['flow_name']}' created: {flow['source_topic_name']} into "
        f"{flow['destination_topic_name']} ({flow['partition_mapping']}; offsets are not "
        "preserved)."
    )


@run
def main(argv: list[str] | None = None) -> int:
    chosen, args = _arguments(argv)
    session = Session(args)
    if chosen == "import":
        return 0 if import_replicator(session, args) else 1
    if chosen == "list":
        links = (
            [args.link]
            if args.link
            else [link["link_name"] for link in session.call("GET", session.links)["data"]]
        )
        for link in links:
            for flow in session.call("GET", session.link_path(link, "flows"))["data"]:
                describe(flow)
        return 0
    if chosen == "create":
        create(session, args)
        return 0
    path = session.link_path(args.link, "flows", args.flow)
    if chosen == "describe":
        describe(session.call("GET", path))
    elif chosen == "delete":
        answer = session.call("DELETE", path, reason=args.reason, validate_only=args.validate_only)
        if answer and answer.get("approval_request"):
            print_request(answer["approval_request"], f"Deleting merge flow '{args.flow}'")
        elif args.validate_only:
            print(f"Merge flow '{args.flow}' deletion successfully validated.")
        else:
            print(f"Merge flow '{args.flow}' deleted; its destination topic stays.")
    else:
        flow = session.call("POST", f"{path}:{chosen}")
        print(f"Merge flow '{flow['flow_name']}' is {flow['state']}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
