"""kafka-cluster-links: create, list and delete cluster links, as Confluent's tool does."""

from __future__ import annotations

from isthmus_cli.common import CliError, Session, configs_from, parser, print_request, run


def _arguments(argv):
    p = parser("kafka-cluster-links", "Create, list and delete cluster links.")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="create a link")
    action.add_argument("--list", action="store_true", help="list links")
    action.add_argument("--delete", action="store_true", help="delete a link")
    p.add_argument("--link", help="the link's name")
    p.add_argument("--config", help="link configs: k1=v1,k2=v2 (brackets group commas: k=[a,b])")
    p.add_argument("--config-file", help="properties file of link configs")
    p.add_argument("--cluster-id", help="the source cluster's id (checked unless not validated)")
    p.add_argument("--validate-only", action="store_true", help="check only; change nothing")
    p.add_argument(
        "--exclude-validate-link",
        action="store_true",
        help="do not contact the source now (needs --cluster-id)",
    )
    p.add_argument("--include-topics", action="store_true", help="list each link's mirrors")
    p.add_argument("--force", action="store_true", help="delete even with mirror topics")
    p.add_argument("--reason", default="", help="why (--delete): approvers read it")
    args = p.parse_args(argv)
    if (args.create or args.delete) and not args.link:
        p.error(f"--{'create' if args.create else 'delete'} needs --link")
    return args


def create(session: Session, args) -> None:
    configs = configs_from(args.config_file, args.config)
    if not configs:
        raise CliError("Give the link's configs with --config or --config-file.")
    if args.exclude_validate_link and not args.cluster_id:
        raise CliError("--exclude-validate-link needs --cluster-id: the source cannot be asked.")
    session.call(
        "POST",
        session.links,
        {
            "source_cluster_id": args.cluster_id,
            "configs": [{"name": k, "value": v} for k, v in configs.items()],
        },
        link_name=args.link,
        validate_only=args.validate_only,
        validate_link=not args.exclude_validate_link,
    )
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
            f"remote cluster ID: '{link['source_cluster_id']}', "
            f"local cluster ID: '{session.cluster_id}', "
            f"remote cluster available: '{str(link['link_state'] != 'UNAVAILABLE').lower()}'"
        )
        if args.include_topics:
            line += f", topics: [{', '.join(link['topic_names'])}]"
        print(line)


def delete(session: Session, args) -> None:
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


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    session = Session(args)
    if args.create:
        create(session, args)
    elif args.list:
        list_links(session, args)
    else:
        delete(session, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
