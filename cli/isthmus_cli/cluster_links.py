"""kafka-cluster-links: create, list and delete cluster links, as Confluent's tool does."""

from __future__ import annotations

from isthmus_cli.common import (
    CliError,
    Session,
    parser,
    print_request,
    read_properties,
    read_text,
    run,
    split_configs,
)

# The filter flags of Confluent's kafka-cluster-links --create: the link config each sets, and
# its JSON given inline and in a file (help texts as Confluent's).
_GROUPS, _ACLS, _TOPICS = (
    "consumer.offset.group.filters",
    "acl.filters",
    "auto.create.mirror.topics.filters",
)
FILTER_FLAGS = {
    "--consumer-group-filters-json": (
        _GROUPS,
        False,
        f"JSON string to use for configuration of {_GROUPS}.",
    ),
    "--consumer-group-filters-json-file": (
        _GROUPS,
        True,
        f"Path to JSON file to use for configuration of {_GROUPS}.",
    ),
    "--acl-filters-json-file": (
        _ACLS,
        True,
        f"Path to the ACL filters JSON file to use for configuration of {_ACLS}.",
    ),
    "--topic-filters-json": (
        _TOPICS,
        False,
        f"JSON string to use for configuration of {_TOPICS}.",
    ),
    "--topic-filters-json-file": (
        _TOPICS,
        True,
        f"Path to JSON file to use for configuration of {_TOPICS}.",
    ),
}


def _arguments(argv):
    p = parser("kafka-cluster-links", "Create, list and delete cluster links.")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create a link")
    action.add_argument("--list", action="store_true", help="list links")
    action.add_argument("--delete", action="store_true", help="delete a link")
    p.add_argument("--link", help="the link's name")
    p.add_argument(
        "--config",
        help="link configs: k1=v1,k2=v2 (brackets group commas: k=[a,b]; JSON as it is: k={...})",
    )
    p.add_argument("--config-file", help="properties file of link configs")
    p.add_argument(
        "--cluster-id",
        help="the source cluster's id (checked unless not validated); for a source half "
        "(link.mode=SOURCE), the destination's",
    )
    p.add_argument("--validate-only", action="store_true", help="check only; change nothing")
    p.add_argument(
        "--exclude-validate-link",
        action="store_true",
        help="do not contact the source now (needs --cluster-id)",
    )
    p.add_argument("--include-topics", action="store_true", help="list each link's mirrors")
    p.add_argument("--force", action="store_true", help="delete even with mirror topics")
    p.add_argument("--reason", default="", help="why (--delete): approvers read it")
    for flag, (_, _, help_text) in FILTER_FLAGS.items():
        p.add_argument(flag, metavar="FILE" if flag.endswith("-file") else "JSON", help=help_text)
    args = p.parse_args(argv)
    if (args.create or args.delete) and not args.link:
        p.error(f"--{'create' if args.create else 'delete'} needs --link")
    return args


def _value(args, flag: str) -> str | None:
    return getattr(args, flag[2:].replace("-", "_"))


def _filter_flags(args) -> list[str]:
    return [flag for flag in FILTER_FLAGS if _value(args, flag) is not None]


def filter_configs(args) -> dict[str, tuple[str, str]]:
    """The link configs the filter flags set, each with the flag that set it: {key: (flag,
    JSON)}. The console checks the JSON, and names the entry it refuses."""
    found: dict[str, tuple[str, str]] = {}
    for flag in _filter_flags(args):
        key, from_file, _ = FILTER_FLAGS[flag]
        if key in found:
            raise CliError(f"Give {found[key][0]} or {flag}, not both: each sets {key}.")
        value = _value(args, flag)
        assert value is not None  # (a flag given)
        if from_file:
            path, value = value, read_text(value, f"{key} JSON").strip()
            if not value:
                raise CliError(f"{path} ({flag}) is empty: it should hold the {key} JSON.")
        found[key] = (flag, value)
    return found


def create_configs(args) -> dict[str, str]:
    """The configs of the link to create: --config-file, --config over it, and the filter
    flags, which may not set a key given in either of those (neither would win)."""
    filters = filter_configs(args)
    from_file = read_properties(args.config_file) if args.config_file else {}
    from_option = split_configs(args.config) if args.config else {}
    configs = {**from_file, **from_option}
    if not configs:
        raise CliError("Give the link's configs with --config or --config-file.")
    for key, (flag, value) in filters.items():
        if key in configs:
            where = "--config" if key in from_option else f"--config-file {args.config_file}"
            raise CliError(
                f"{key} is given twice, by {flag} and in {where}: give it in one place only."
            )
        configs[key] = value
    return configs


def create(session: Session, args, configs: dict[str, str]) -> None:
    if args.exclude_validate_link and not args.cluster_id:
        raise CliError("--exclude-validate-link needs --cluster-id: the source cannot be asked.")
    # A source-initiated link's source half is created on its source: --cluster-id then names
    # its destination.
    source_half = configs.get("link.mode", "").strip().upper() == "SOURCE"
    remote = "destination_cluster_id" if source_half else "source_cluster_id"
    existing = session.call(
        "POST",
        session.links,
        {remote: args.cluster_id, "configs": [{"name": k, "value": v} for k, v in configs.items()]},
        link_name=args.link,
        validate_only=args.validate_only,
        validate_link=not args.exclude_validate_link,
    )
    if existing and source_half:
        print(
            f"Cluster link '{args.link}' into '{args.cluster_id}' has its source half "
            "already. Nothing new was made."
        )
        return
    if existing:
        # The second side's create of a bidirectional link, as Confluent's recipe has it:
        # Isthmus made both halves at the first, so the console answered the existing half.
        print(
            f"Cluster link '{args.link}' exists already on this cluster, from "
            f"'{existing['source_cluster_id']}': it is the other half of the bidirectional "
            "link made on both clusters at its first create. Nothing new was made."
        )
        return
    done = "validated" if args.validate_only else "completed"
    print(f"Cluster link '{args.link}' creation successfully {done}.")


def list_links(session: Session, args) -> None:
    if args.link:
        links = [session.call("GET", session.link_path(args.link))]
    else:
        links = session.call("GET", session.links)["data"]
    for link in links:
        line = (
            f"Link name: '{link['link_name']}', link ID: '{link['link_id']}', "
            f"remote cluster ID: '{link['source_cluster_id'] or link['destination_cluster_id']}', "
            f"local cluster ID: '{session.cluster_id}', "
            f"remote cluster available: '{str(link['link_state'] != 'UNAVAILABLE').lower()}'"
        )
        if args.include_topics:
            line += f", topics: [{', '.join(link['topic_names'])}]"
        print(line)


def delete(session: Session, args) -> None:
    # A bidirectional link is one object: the console deletes both halves, and says so here.
    found = session.call("GET", session.link_path(args.link))
    other = found.get("other_half")
    answer = session.call(
        "DELETE",
        session.link_path(args.link),
        force=args.force,
        validate_only=args.validate_only,
        reason=args.reason,
    )
    if answer and answer.get("approval_request"):
        print_request(answer["approval_request"], f"Deleting cluster link '{args.link}'")
        return
    done = "validated" if args.validate_only else "completed"
    print(f"Cluster link '{args.link}' deletion successfully {done}.")
    if found.get("destination_cluster_id"):
        print(
            f"It is the source half of a source-initiated link: its destination half, on "
            f"{found['destination_cluster_id']}, {'would wait' if args.validate_only else 'waits'} "
            "for a source half again, with its mirror topics, and copies nothing until then."
        )
    if other:
        print(
            f"It is bidirectional: its other half, into {other['cluster_name']} "
            f"({other['cluster_id']}), {'would be' if args.validate_only else 'was'} deleted "
            f"with it, with its {len(other['topic_names'])} mirror topic(s) and "
            f"{len(other['flow_names'])} merge flow(s); every topic stays on both clusters."
        )


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if not args.create and _filter_flags(args):
        raise CliError(f"{_filter_flags(args)[0]} is for --create only.")
    # The user's own input first: a mistake in it is reported without reaching anything.
    configs = create_configs(args) if args.create else {}
    session = Session(args)
    if args.create:
        create(session, args, configs)
    elif args.list:
        list_links(session, args)
    else:
        delete(session, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
