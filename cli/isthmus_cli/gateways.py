"""isthmus-gateways: Isthmus's own tool for gateways, the Kafka proxies applications reach
instead of a cluster: list and describe them, define, change and delete one, and switch one's
clients to another cluster. Gateways are not a cluster's, so it takes no --bootstrap-server:
only the console (--command-config, or ISTHMUS_URL and ISTHMUS_TOKEN)."""

from __future__ import annotations

import urllib.parse

from isthmus_cli.common import (
    Console,
    console_settings,
    names,
    parser,
    read_properties,
    run,
)


def _arguments(argv):
    p = parser(
        "isthmus-gateways",
        "List, describe, define, change, switch and delete gateways: Kafka proxies "
        "(Kroxylicious) that applications connect to instead of a cluster.",
        cluster=False,
    )
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="every gateway, one a line")
    action.add_argument("--describe", action="store_true", help="--gateway, in full")
    action.add_argument("--create", action="store_true", help="define --gateway (admins)")
    action.add_argument("--alter", action="store_true", help="change its --address or --clusters")
    action.add_argument(
        "--switch", action="store_true", help="move every client of --gateway to --cluster"
    )
    action.add_argument("--delete", action="store_true", help="stop and forget --gateway")
    p.add_argument("--gateway", help="the gateway's name")
    p.add_argument("--address", help="--create, --alter: HOST:PORT its clients connect to")
    p.add_argument("--clusters", help="--create, --alter: clusters it may route to, by name")
    p.add_argument("--route", help="--create: the cluster it routes to first")
    p.add_argument("--cluster", help="--switch: the cluster its clients move to")
    args = p.parse_args(argv)
    needed = {
        "describe": ["gateway"],
        "create": ["gateway", "address", "clusters", "route"],
        "alter": ["gateway"],
        "switch": ["gateway", "cluster"],
        "delete": ["gateway"],
    }
    for verb, options in needed.items():
        if getattr(args, verb):
            missing = [f"--{o}" for o in options if not getattr(args, o)]
            if missing:
                p.error(f"--{verb} needs {' and '.join(missing)}")
    if args.alter and not (args.address or args.clusters):
        p.error("--alter needs --address, --clusters or both")
    return args


def line(found: dict) -> str:
    proxy = "running" if found["running"] else "stopped"
    return (
        f"Gateway: {found['gateway_name']}\tAddress: {found['address']}\t"
        f"Route: {found['route_cluster_name']}\tClusters: {','.join(found['cluster_names'])}\t"
        f"Proxy: {proxy}\tSwitches: {found['switches']}"
    )


def describe(found: dict) -> None:
    print(line(found))
    connections = found["connections_total"]
    print(f"\tConnectionsAccepted: {'-' if connections is None else connections}")
    print(f"\tLastSwitch: {found['switched_at'] or '-'}")


def path(gateway: str, verb: str = "") -> str:
    return f"/gateways/{urllib.parse.quote(gateway, safe='')}{verb}"


@run
def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    config = read_properties(args.command_config) if args.command_config else {}
    console = Console(*console_settings(config))
    if args.list:
        found = console.call("GET", "/gateways") or {"data": []}
        for gateway in found["data"]:
            print(line(gateway))
        if not found["data"]:
            print("No gateways defined.")
    elif args.describe:
        describe(console.call("GET", path(args.gateway)) or {})
    elif args.create:
        body = {
            "gateway_name": args.gateway,
            "address": args.address,
            "cluster_names": names(args.clusters),
            "route_cluster_name": args.route,
        }
        made = console.call("POST", "/gateways", body) or {}
        print(
            f"Gateway {made['gateway_name']} answers at {made['address']} and routes to "
            f"{made['route_cluster_name']}."
        )
    elif args.alter:
        body = {"address": args.address, "cluster_names": names(args.clusters) or None}
        changed = console.call("PATCH", path(args.gateway), body) or {}
        print(f"Changed gateway {changed['gateway_name']}: {line(changed)}")
    elif args.switch:
        body = {"cluster_name": args.cluster}
        switched = console.call("POST", path(args.gateway, ":switch"), body) or {}
        print(
            f"Gateway {switched['gateway_name']} routes its clients to "
            f"{switched['route_cluster_name']} now."
        )
    elif args.delete:
        console.call("DELETE", path(args.gateway))
        print(f"Deleted gateway {args.gateway}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
