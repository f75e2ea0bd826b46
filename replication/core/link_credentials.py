"""Where and as whom a link from a registered cluster connects: the cluster's registered
address and the principal registered for links from it, never the console's own credentials,
and no connection setting typed beside them: registered credentials go to the registered
address only.
"""

from __future__ import annotations

from replication.core.errors import FieldProblems, ReplicationError
from replication.core.link_configs import CONNECTION_KEYS


def from_cluster(cluster) -> dict[str, str]:
    """A registered cluster's connection as link configs: its registered address and the
    principal registered for links from it, never the console's own credentials (often a
    super-user, which Kafka lets past every ACL, a mirror's deny-write rule too)."""
    if cluster.link_config or cluster.link_secret_config:
        return cluster.link_connection_config()
    if cluster.secret_config:
        problem = ReplicationError(
            f"Cluster {cluster.name} has no link credentials registered, and its own are the "
            "console's, which links do not borrow. Ask an admin to set the credentials links "
            f"from {cluster.name} use (a principal that may only read), or leave the source "
            "cluster empty and give the link's own connection settings."
        )
        raise FieldProblems({"source": problem})
    return {"bootstrap.servers": cluster.bootstrap_servers}


def bound_to_cluster(cluster, typed: dict[str, str]) -> dict[str, str]:
    """The configs of a link whose source is the registered `cluster`: its address and link
    principal, then the typed configs, which may not change how or where it connects: the
    registered credentials go to the registered address only."""
    base = from_cluster(cluster)
    changed = sorted(
        k for k in typed if k in CONNECTION_KEYS and typed[k].strip() != base.get(k, "")
    )
    if changed:
        raise FieldProblems.one(
            "configs",
            f"The link takes its connection from the registered cluster {cluster.name} "
            f"({cluster.bootstrap_servers}), so {', '.join(changed)} cannot be given too: "
            "registered credentials are used at the registered address only. To connect "
            "elsewhere, leave the source cluster empty and give the link's own "
            "bootstrap.servers and credentials.",
        )
    return {**base, **typed}
