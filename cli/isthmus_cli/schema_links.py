"""kafka-schema-links: Isthmus's own tool for a link's schema sync: the subjects it copies from
the source cluster's schema registry to the destination's under the same ids and versions, a
sync now, and synced subjects made writable on the destination (subject to approval)."""

from __future__ import annotations

from isthmus_cli.common import Session, inert_answer, names, parser, print_request, run


def _arguments(argv):
    p = parser(
        "kafka-schema-links",
        "Describe a link's schema sync and each subject's state, ask for a sync now, or make "
        "synced subjects writable on the destination.",
    )
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="show the link's schema sync")
    action.add_argument(
        "--sync", action="store_true", help="sync the link's schemas now (within a second)"
    )
    action.add_argument(
        "--promote",
        action="store_true",
        help="make --subjects writable on the destination and sync them no more",
    )
    p.add_argument("--link", required=True, help="the link's name")
    p.add_argument("--subjects", help="--promote: synced subjects, comma-separated")
    p.add_argument("--reason", default="", help="--promote: why (approvers and the audit read it)")
    p.add_argument("--validate-only", action="store_true", help="check only; change nothing")
    args = p.parse_args(argv)
    if args.promote and not names(args.subjects):
        p.error("--promote needs --subjects")
    return args


def describe(found: dict) -> None:
    found = inert_answer(found)
    state = f"on, every {found['interval_ms']} ms" if found["enabled"] else "off"
    print(
        f"Link: {found['link_name']}\tSchemaSync: {state}\t"
        f"Subjects: {found['subject_filters'] or '(the mirrors subjects)'}\t"
        f"SourceContext: {found['source_context'] or '(default)'}\t"
        f"Context: {found['context'] or '(default)'}\t"
        f"LastRun: {found['synced_at'] or '-'}"
    )
    if found["error_message"]:
        print(f"\tError: {found['error_message']}")
    for s in found["subjects"]:
        versions = ",".join(map(str, s["versions"])) or "-"
        print(
            f"\tSubject: {s['subject']}\tState: {s['state']}\tVersions: {versions}\t"
            f"Compatibility: {s['compatibility'] or '-'}\tChanged: {s['changed_at']}"
            + (f"\tMessage: {s['message']}" if s["message"] else "")
        )


def promote(session: Session, args) -> None:
    answer = session.call(
        "POST",
        session.link_path(args.link, "schemas:promote"),
        {"subjects": names(args.subjects), "reason": args.reason},
        validate_only=args.validate_only,
    )
    if answer and answer.get("approval_request"):
        print_request(answer["approval_request"], "Making the subjects writable")
    elif args.validate_only:
        print("Making the subjects writable successfully validated.")
    else:
        print(f"Writable on the destination now: {', '.join(names(args.subjects))}.")


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    session = Session(args)
    if args.sync:
        session.call("POST", session.link_path(args.link, "schemas:sync"))
        print(f"Schema sync of link '{args.link}' asked for: it runs within a second.")
    elif args.promote:
        promote(session, args)
    else:
        describe(session.call("GET", session.link_path(args.link, "schemas")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
