"""kafka-configs: with --cluster-link, describe and alter a link's configs through the console;
any other call is Apache Kafka's own kafka-configs, unchanged.

In a checkout it is bin/kafka-configs, as the tutorial types it. Installed alone (cli/) it is
`isthmus-kafka-configs`, so it never shadows Apache Kafka's own `kafka-configs` on the PATH."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from isthmus_cli.common import CliError, Session, configs_from, names, parser, run

# Apache Kafka from the jars `make setup` fetched, in a checkout (cli/isthmus_cli/ is two below).
KAFKA_RUN = Path(__file__).resolve().parents[2] / "devstack" / "kafka-run"


def _kafka_configs(argv: list[str]) -> None:
    """Hand the call to Apache Kafka's tool: from KAFKA_HOME if set, else the checkout's jars,
    else `kafka-configs.sh` on the PATH."""
    if os.environ.get("KAFKA_HOME"):
        tool = Path(os.environ["KAFKA_HOME"]) / "bin" / "kafka-configs.sh"
        command = [str(tool), *argv]
    elif KAFKA_RUN.exists():
        tool = KAFKA_RUN
        command = [str(tool), "kafka.admin.ConfigCommand", *argv]
    else:
        tool = Path(shutil.which("kafka-configs.sh") or "kafka-configs.sh")
        command = [str(tool), *argv]
    if not tool.exists():
        raise CliError(
            f"Apache Kafka's kafka-configs was not found at {tool}: set KAFKA_HOME to an "
            "Apache Kafka install (or give --cluster-link for a link's configs)."
        )
    os.execv(tool, command)  # noqa: S606


def _arguments(argv):
    p = parser("kafka-configs --cluster-link", "Describe or alter a cluster link's configs.")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true")
    action.add_argument("--alter", action="store_true")
    p.add_argument("--cluster-link", required=True, help="the link's name")
    p.add_argument(
        "--add-config",
        help="k1=v1,k2=v2 (brackets group commas: k=[a,b]; JSON as it is: k={...})",
    )
    p.add_argument("--add-config-file", help="properties file of configs to set")
    p.add_argument("--delete-config", help="config names to reset, comma-separated")
    p.add_argument("--all", action="store_true", help="--describe defaults too")
    return p.parse_args(argv)


def describe(session: Session, args) -> None:
    data = session.call("GET", session.link_path(args.cluster_link, "configs"))["data"]
    shown = data if args.all else [c for c in data if not c["is_default"]]
    print(f"{'All' if args.all else 'Dynamic'} configs for cluster-link {args.cluster_link} are:")
    for config in shown:
        # Kafka's own tool prints a secret as null
        value = "null" if config["is_sensitive"] or config["value"] is None else config["value"]
        sensitive = str(config["is_sensitive"]).lower()
        print(f"  {config['name']}={value} sensitive={sensitive} synonyms={{}}")


def alter(session: Session, args) -> None:
    to_set = configs_from(args.add_config_file, args.add_config)
    to_delete = names(args.delete_config)
    if not to_set and not to_delete:
        raise CliError("Give --add-config, --add-config-file or --delete-config.")
    changes = [{"name": k, "value": v, "operation": "SET"} for k, v in to_set.items()]
    changes += [{"name": k, "operation": "DELETE"} for k in to_delete]
    session.call("PUT", session.link_path(args.cluster_link, "configs:alter"), {"data": changes})
    print(f"Completed updating config for cluster-link {args.cluster_link}.")


@run
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not any(a == "--cluster-link" or a.startswith("--cluster-link=") for a in argv):
        _kafka_configs(argv)
    args = _arguments(argv)
    session = Session(args)
    if args.describe:
        describe(session, args)
    else:
        alter(session, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
