"""A Replicator user moves over by pasting a Replicator connector's configuration (Kafka Connect's
JSON, `{"name": ..., "config": {...}}` or the config alone, or a properties file): Isthmus shows
the merge flows it stands for, then creates them.

What is read: `topic.whitelist` / `topic.include`, `topic.regex` (run by RE2, as mirror patterns
are: a Java look-around or back-reference is refused in words), `topic.blacklist` /
`topic.exclude` (Replicator's order: an excluded topic never, then a listed or matching one),
`topic.rename.format` (`${topic}` is the source topic's name), `src.kafka.bootstrap.servers` and
`dest.kafka.bootstrap.servers` (which clusters: the destination must be the cluster the import
runs on, the source one a link into it reads from). Replicator's other settings say how its
Connect workers run and have no meaning here; each is named in the plan's notes, with
`provenance.header.enable` (a flow always carries its origin) and the client credentials (a
link's own are used: a pasted secret is never stored).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from infra.kafka_errors import KafkaAdminError
from replication.actions import approvals
from replication.core import filters, patterns
from replication.core.errors import ReplicationError
from replication.core.text import json_document
from replication.governance import audit
from replication.kafka.connections import source_admin, unreachable
from replication.models import ApprovalRequest, ClusterLink, KafkaCluster, MergeFlow
from replication.topics import merge_flows

TOPIC_KEYS = ("topic.whitelist", "topic.include", "topic.regex", "topic.blacklist", "topic.exclude")
USED = {
    *TOPIC_KEYS,
    "topic.rename.format",
    "src.kafka.bootstrap.servers",
    "dest.kafka.bootstrap.servers",
    "name",
    "connector.class",
    "provenance.header.enable",
}
MAX_TEXT = 256 * 1024
_SETTING = re.compile(r"([^=:\s]+)\s*[=:]\s*(.*)")


@dataclass
class Plan:
    """What a Replicator configuration stands for here: the flows to create over `link`."""

    connector: str
    link: ClusterLink | None = None
    flows: list[tuple[str, str]] = field(default_factory=list)  # (source, destination topic)
    existing: list[str] = field(default_factory=list)  # flows of those that are there already
    notes: list[str] = field(default_factory=list)


def parse(text: str) -> dict[str, str]:
    """The connector's settings, from Connect's JSON (with or without its "config" wrapper) or
    a properties file; refused, saying why, when it is neither."""
    if len(text) > MAX_TEXT:
        raise ReplicationError(f"The configuration is over {MAX_TEXT // 1024} KiB; paste less.")
    stripped = text.strip()
    if not stripped:
        raise ReplicationError("Paste a Replicator connector's configuration: JSON or properties.")
    if stripped[0] in "{[":
        try:
            found = json_document(stripped, "configuration")
        except ReplicationError as exc:
            raise ReplicationError(f"{exc} Paste Connect's JSON, or a properties file.") from None
        config = found.get("config", found) if isinstance(found, dict) else None
        if not isinstance(config, dict):
            raise ReplicationError('The JSON must be an object: {"name": ..., "config": {...}}.')
        settings = {str(k): _setting(str(k), v) for k, v in config.items()}
        if "name" in found and "name" not in settings:
            settings["name"] = _setting("name", found["name"])
        return settings
    settings = {}
    for number, line in enumerate(stripped.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        setting = _SETTING.fullmatch(line)
        if setting is None:
            raise ReplicationError(
                f"Line {number} is not a key=value setting: {line[:80]!r}. Paste Connect's JSON, "
                "or a properties file."
            )
        settings[setting[1]] = setting[2]
    return settings


def _setting(key: str, value: object) -> str:
    """A JSON setting as the text a properties file would hold. Connect's settings are strings
    (numbers and booleans are taken as written); a list or an object is none, and turning one
    nested hundreds deep into text could itself fail, so it is refused."""
    if isinstance(value, (list, dict)):
        raise ReplicationError(
            f"Setting {key[:100]!r} is a JSON {'list' if isinstance(value, list) else 'object'}: "
            "a Replicator setting is a string (a list of topics is one string, separated by "
            "commas). Nothing was changed."
        )
    return "" if value is None else str(value)


def selected(settings: dict[str, str], topics: set[str]) -> list[str]:
    """The source topics the configuration selects, in Replicator's order: excluded ones never,
    then those listed or matching the regex; never an internal topic."""
    listed = _names(settings, "topic.whitelist", "topic.include")
    excluded = set(_names(settings, "topic.blacklist", "topic.exclude"))
    pattern = settings.get("topic.regex", "").strip()
    regex = _regex(pattern) if pattern else None
    if not listed and regex is None:
        raise ReplicationError(
            "The configuration selects no topic: give topic.whitelist (or topic.include) or "
            "topic.regex."
        )
    chosen = {t for t in listed if t in topics}
    if regex is not None:
        chosen |= {t for t in topics if regex.fullmatch(t)}
    return sorted(t for t in chosen - excluded if not filters.internal_topic(t))


def _regex(pattern: str):
    return patterns.compiled(pattern, "topic.regex")


def renamed(settings: dict[str, str], topic: str) -> str:
    return settings.get("topic.rename.format", "${topic}").replace("${topic}", topic)


def _names(settings: dict[str, str], *keys: str) -> list[str]:
    return [n.strip() for k in keys for n in settings.get(k, "").split(",") if n.strip()]


def _addresses(servers: str) -> set[str]:
    return {s.strip().lower() for s in servers.split(",") if s.strip()}


def _link_from(destination: KafkaCluster, servers: str) -> ClusterLink:
    """The link into `destination` whose source is at one of `servers` (the oldest, if
    several are)."""
    wanted = _addresses(servers)
    for link in destination.links.order_by("pk"):
        if _addresses(link.all_configs().get("bootstrap.servers", "")) & wanted:
            return link
    raise ReplicationError(
        f"No link into {destination.name} reads from {servers} (src.kafka.bootstrap.servers). "
        "Create a link from that cluster first, then import again. Nothing was changed."
    )


def plan(destination: KafkaCluster, text: str) -> Plan:
    """The merge flows the configuration stands for on `destination`, read from its source now."""
    settings = parse(text)
    if pattern := settings.get("topic.regex", "").strip():
        _regex(pattern)  # refused before the source is asked for its topics
    connector = settings.get("name") or "replicator"
    found = Plan(connector)
    dest = settings.get("dest.kafka.bootstrap.servers", "")
    if dest and not _addresses(dest) & _addresses(destination.bootstrap_servers):
        raise ReplicationError(
            f"dest.kafka.bootstrap.servers is {dest}, not {destination.name} "
            f"({destination.bootstrap_servers}): import it on the cluster it copies into."
        )
    source = settings.get("src.kafka.bootstrap.servers", "")
    if not source:
        raise ReplicationError(
            "src.kafka.bootstrap.servers is missing: it says which cluster to copy from."
        )
    found.link = _link_from(destination, source)
    try:
        topics = source_admin(found.link).list_topic_names()
    except KafkaAdminError as exc:
        raise unreachable("source", exc) from exc
    found.flows = [(t, renamed(settings, t)) for t in selected(settings, topics)]
    missing = sorted(set(_names(settings, "topic.whitelist", "topic.include")) - topics)
    if missing:
        found.notes.append(f"Listed but not on the source now: {', '.join(missing)}.")
    have = set(found.link.flows.values_list("source_topic", "destination_topic"))
    found.existing = [f"{s} into {d}" for s, d in found.flows if (s, d) in have]
    ignored = sorted(k for k in settings if k not in USED)
    if settings.get("provenance.header.enable", "").lower() == "false":
        found.notes.append(
            "provenance.header.enable=false: merge flows always carry each record's origin "
            "(the isthmus.origin header), which is how they never copy a record back."
        )
    if ignored:
        found.notes.append(
            "Not used (Connect and client settings; the link's own connection is used, and no "
            f"pasted secret is kept): {', '.join(ignored)}."
        )
    return found


def create(
    actor: audit.Actor, destination: KafkaCluster, text: str, reason: str = ""
) -> tuple[Plan, dict[tuple[str, str], MergeFlow | ApprovalRequest | ReplicationError]]:
    """Create the flows of the plan that are not there yet, each as the link's approval policy
    says (at once, or asked for as a request of its own); each refused one does not stop the
    others. Returns the plan and, per flow tried, the flow made, the request, or the refusal."""
    found = plan(destination, text)
    reason = reason or f"Imported from Replicator connector {found.connector}."
    outcomes: dict[tuple[str, str], MergeFlow | ApprovalRequest | ReplicationError] = {}
    for source, into in found.flows:
        link = found.link
        assert link is not None  # a plan with flows has found its link
        if f"{source} into {into}" in found.existing:
            continue
        name = f"{found.connector}.{source}"
        params = {"flow": name, "source_topic": source, "destination_topic": into}
        try:
            asked = approvals.submit(
                actor, link, approvals.Action.CREATE_FLOW, reason=reason, params=params
            )
            outcomes[source, into] = asked.request or merge_flows.get_flow(link, name)
        except ReplicationError as exc:
            outcomes[source, into] = exc
    return found, outcomes
