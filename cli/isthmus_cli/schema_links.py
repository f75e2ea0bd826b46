"""kafka-schema-links: Isthmus's own tool for a link's schema sync: the subjects it copies from
the source cluster's schema registry to the destination's under the same ids and versions."""

from __future__ import annotations

from isthmus_cli.common import Session, inert_answer, parser, run


def _arguments(argv):
    p = parser(
        "kafka-schema-links",
        "Describe a link's schema sync and each subject's state, or ask for a sync now.",
    )
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="show the link's schema sync")
    action.add_argument(
        "--sync", action="store_true", help="sync the link's schemas now (within a second)"
    )
    p.add_argument("--link", required=True, help="the link's name")
    return p.parse_args(argv)


def describe(found: dict) -> None:
    found = inert_answer(found)
    state = f"on, every {found['interval_ms']} ms" if found["enabled"] else "off"
    print(
        f"Link: {found['link_name']}\tSchemaSync: {state}\t"
        f"Subjects: {found['subject_filters'] or '(the mirrors subjects)'}\t"
        f"Context: {found['context'] or '(default)'}\t"
        f"LastRun: {found['synced_at'] or '-'}"
    )
    if found["error_message"]:
        print(f"\tError: {found['error_message']}")
    for s in found["subjects"]:
        versions = ",".join(map(str, s["versions"])) or "-"
        print(
            f"\tSubject: {s['subject']}\tState: {s['state']}\tVersions: {versions}\t"
            f"Changed: {s['changed_at']}" + (f"\tMessage: {s['message']}" if s["message"] else "")
        )


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    session = Session(args)
    if args.sync:
        session.call("POST", session.link_path(args.link, "schemas:sync"))
        print(f"Schema sync of link '{args.link}' asked for: it runs within a second.")
    else:
        describe(session.call("GET", session.link_path(args.link, "schemas")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
