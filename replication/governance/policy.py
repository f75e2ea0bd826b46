"""The access policy: one place that decides who may do what, for the console, the API, the
CLI and the domain's own approval rules alike. Roles are Django groups."""

from __future__ import annotations

from django.db.models import prefetch_related_objects

ROLES = ("viewer", "operator", "approver", "admin")
EVERYONE = frozenset(ROLES)
OPERATORS = frozenset({"operator", "admin"})
ADMINS = frozenset({"admin"})

# action -> the roles that may perform it
POLICY: dict[str, frozenset[str]] = {
    "console.view": EVERYONE,
    "cluster.register": ADMINS,
    # define, change and delete gateways (a Kafka proxy its clients reach instead of a
    # cluster), and switch one to another of its clusters outside a cutover: a switch moves
    # every client of the gateway at once
    "gateway.manage": ADMINS,
    # read the brokers' configs (listeners, super.users, paths: how the cluster is set up, not
    # what it holds), as `confluent kafka cluster configuration list` does; sensitive values
    # are never shown to anyone
    "broker_configs.view": OPERATORS,
    # create links, change their configs, pause and resume them
    "link.manage": OPERATORS,
    # delete a link: an operator asks for it, an admin may act at once (see approvals)
    "link.delete": OPERATORS,
    # create mirror topics, pause and resume them
    "mirror.manage": OPERATORS,
    "mirror.delete": ADMINS,
    # create, pause, resume and delete merge flows (copies into ordinary topics)
    "flow.manage": OPERATORS,
    # promote, fail over or reverse mirror topics: asked for by an operator, subject to approval
    "mirror.stop": OPERATORS,
    # approve or reject someone else's request
    "request.approve": frozenset({"approver", "admin"}),
    # act without approval (an override, where the link's policy allows it), break glass on a
    # failover, and set a link's approval policy
    "request.override": ADMINS,
    "approval_policy.manage": ADMINS,
    # drill a link (start one now, set its schedule): a canary topic of the drill's own is
    # failed over and back, never a user's, so no approval is asked
    "drill.run": OPERATORS,
    # run a scenario: it creates, promotes and fails over without approval, and the
    # disaster-recovery one stops the embedded stack's source cluster
    "scenario.run": ADMINS,
    # read the audit trail
    "audit.view": EVERYONE,
    # make and revoke one's own API tokens
    "token.manage": EVERYONE,
    # make users, set their role, disable and enable them, reset their passwords
    "user.manage": ADMINS,
}


def roles_of(user) -> frozenset[str]:
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return EVERYONE
    # Read once a request (the view's check and the page's menu both ask), through Django's
    # prefetch cache, which a change of the user's groups empties.
    if "groups" not in getattr(user, "_prefetched_objects_cache", {}):
        prefetch_related_objects([user], "groups")
    return frozenset(g.name for g in user.groups.all() if g.name in ROLES)


def can(user, action: str) -> bool:
    return bool(roles_of(user) & POLICY[action])
