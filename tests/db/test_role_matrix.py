"""The full role × action matrix: every mutating action of the console, the JSON API and the
command-line tools, done by every role, is allowed exactly when the access policy says so, and
leaves exactly one audit event naming that role's user and the result. The clusters are in
memory (tests/memory_kafka.py): what is checked is the policy, the audit and the state each
action leaves, none of which needs a broker.

What each role may do is read from `replication.governance.policy.POLICY` (through `can`), and so is
whether an allowed promote, failover or link deletion runs at once or waits as a PENDING approval
request (the link's approval policy, and request.override): the tables below name actions, never
roles, so the matrix follows the policy. The completeness tests tie the tables to the policy, to
console/urls.py, to console/api/urls.py and to the tools' own options, so a new action or route
cannot slip by.

Every target is one on which the action would succeed, so a refusal is the policy's and not the
object's state. Refused cases share their targets and must leave the database as it was; only
an action that consumes its target gets a fresh one. Links are paused and source topics empty, so
every mirror has lag 0 and promotes without a stream. Requests that get approved here need two
approvals, so an approval never starts a run and no Celery worker is needed (the run itself is
tested in test_approvals).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import tempfile
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import URLPattern, get_resolver, reverse
from django.utils import timezone

from devstack import kafka
from devstack import registry as schema_registries
from isthmus_cli import cluster_links as cli_cluster_links
from isthmus_cli import configs as cli_configs
from isthmus_cli import gateways as cli_gateways
from isthmus_cli import merge_flows as cli_merge_flows
from isthmus_cli import mirrors as cli_mirrors
from isthmus_cli import replica_status as cli_replica_status
from isthmus_cli import schema_links as cli_schema_links
from replication.actions import approvals, replicator_import
from replication.cutover import promote, restore, restore_quarantine
from replication.governance import audit
from replication.governance import users as user_admin
from replication.governance.policy import POLICY, ROLES, can
from replication.governance.tokens import create_token
from replication.kafka import gateways
from replication.models import (
    ApiToken,
    Approval,
    ApprovalRequest,
    AuditEvent,
    ClusterLink,
    DrillRun,
    DrillSchedule,
    Gateway,
    KafkaCluster,
    MergeFlow,
    MirrorTopic,
    ScenarioRun,
    SchemaSubjectSync,
    Verification,
)
from replication.scenarios import registry, runner
from replication.states.mirror_states import FOLLOWING, PROMOTABLE
from replication.topics import link_creation, links, merge_flows, mirrors
from tests import cli_in_process
from tests.url_routes import api_routes

SETUP = audit.Actor.system("tests")
REASON = "role matrix"
CONFIG = "metadata.max.age.ms"  # a link config any change may set: it touches nothing else
PAUSED = "cluster.link.paused"  # setting it pauses the link; resetting it resumes the link
State = MirrorTopic.State
LinkState = ClusterLink.State

# Policy actions that only read: no route guarded by them may change anything (checked below).
READ_ONLY = frozenset({"console.view", "audit.view", "broker_configs.view"})
# Console routes outside the matrix, and why.
CONSOLE_EXCLUDED = {
    "login/": "public: signs in, before there is a role to check",
    "logout/": "public: ends the session (audited), changes nothing else",
    "login/sso/": "public: sends the browser to the identity provider, changes nothing",
    "login/sso/done/": "public: signs in through the identity provider (audited), with the role "
    "its groups map to (tests/db/test_single_sign_on.py, tests/e2e/test_single_sign_on.py)",
    "account/password/": "one's own password, for every role, on oneself only "
    "(tests/db/test_own_password.py)",
    "healthz": "public health check: reads only",
    "users/": "the users list (user.manage, to see it): reads only",
    "users/<str:username>/": "a user's page (user.manage, to see it): reads only",
}
# Of those, the ones that read only: a POST to them changes nothing (checked below).
CONSOLE_READING = frozenset({"healthz", "users/", "users/<str:username>/"})
# Policy actions the JSON API (and so the tools, its clients) has no route for: only the console
# offers them. A test fails as soon as the API grows a route for one, so that it gets its rows.
API_ABSENT = {
    "cluster.register": "clusters are registered on the console's clusters page only",
    "mirror.delete": "Kafka REST v3 has no mirror deletion; the console's mirror page deletes",
    "approval_policy.manage": "a link's approval policy is set on the console's link page only",
    "token.manage": "tokens are made and revoked on the account page: a token makes no token",
    "user.manage": "users are managed on the console's Users page only",
    "scenario.run": "scenarios run on the console's Scenarios page and with manage.py",
    "drill.run": "drills start on the console's readiness page, and on their schedule by the beat",
}
# The tools' options that only read.
CLI_READ_FLAGS = frozenset({"--list", "--describe", "--describe-request", "--list-requests"})
CLI_TOOLS = {
    "kafka-cluster-links": cli_cluster_links,
    "kafka-configs": cli_configs,
    "kafka-mirrors": cli_mirrors,
    "kafka-merge-flows": cli_merge_flows,
    "kafka-replica-status": cli_replica_status,
    "kafka-schema-links": cli_schema_links,
    "isthmus-gateways": cli_gateways,
}


def acts_at_once(user, link: ClusterLink) -> bool:
    """Whether `user`'s promote, failover or deletion of `link` runs without approval, by the
    policy's words: the link's policy needs no approval, or it allows an override and the user's
    role may override (request.override)."""
    return link.approvals_required == 0 or (
        link.admin_may_override and can(user, "request.override")
    )


# The objects the actions work on. ------------------------------------------------------------


@dataclass
class Target:
    link: ClusterLink | None = None
    mirror: MirrorTopic | None = None
    flow: MergeFlow | None = None
    request: ApprovalRequest | None = None
    token: ApiToken | None = None
    run: ScenarioRun | None = None
    name: str = ""  # a new object's name, or a config value


class World:
    """A test's links, mirrors and requests, made as the actions need them: `link` holds the
    mirrors to pause, resume, promote and fail over (an admin acts at once there), `strict`
    those an admin must break glass for (no admin override)."""

    def __init__(self, users, make_link, make_topic, topic_name, clusters):
        self.users, self.destination = users, clusters["destination"]
        self._make_link, self._make_topic, self._topic_name = make_link, make_topic, topic_name
        self._count = 0
        self.link = self.new_link()
        self.strict = self.new_link(admin_may_override=False)
        self._clusters = clusters
        self.source = clusters["source"]
        self._both: ClusterLink | None = None

    @property
    def both(self) -> ClusterLink:
        """A running bidirectional link (its half into the destination), made when first
        needed: the mirrors a reverse takes are ACTIVE there."""
        if self._both is None:
            self._both = link_creation.create_link(
                SETUP,
                self.destination,
                self.name("both"),
                {"link.mode": "BIDIRECTIONAL"},
                source=self._clusters["source"],
            )
            halves = [self._both.pk, links.peer_of(self._both).pk]
            ClusterLink.objects.filter(pk__in=halves).update(approvals_required=2)
            self._both.refresh_from_db()
        return self._both

    def failed_over(self) -> MirrorTopic:
        """A mirror of the bidirectional link, failed over: its source's old primary is what a
        truncate-and-restore restores."""
        mirror = self.new_mirror(self.both)
        [outcome] = promote.stop_mirrors(
            SETUP, self.both, [mirror.mirror_topic], promote.FAILOVER, wait=True
        )
        assert outcome.state == State.STOPPED, outcome
        return MirrorTopic.objects.get(pk=mirror.pk)

    def name(self, what: str) -> str:
        return f"{what}-{uuid.uuid4().hex[:8]}"

    def new_link(self, *, paused: bool = True, admin_may_override: bool = True) -> ClusterLink:
        """A link whose requests need two approvals, so one approval never runs them."""
        link = self._make_link({"cluster.link.paused": "true"} if paused else {})
        ClusterLink.objects.filter(pk=link.pk).update(
            approvals_required=2, admin_may_override=admin_may_override
        )
        link.refresh_from_db()
        return link

    def mirrorless(self, state: str) -> ClusterLink:
        """A link without mirrors in `state` (which a deletion needs no force for)."""
        found = (
            ClusterLink.objects.filter(
                destination=self.destination, state=state, mirrors__isnull=True
            )
            .exclude(pk__in=[self.link.pk, self.strict.pk])
            .order_by("pk")
            .first()
        )
        return found or self.new_link(paused=state == LinkState.PAUSED)

    def source_topic(self) -> str:
        """An empty source topic no mirror follows yet."""
        self._count += 1
        return self._make_topic(kafka.SOURCE, f"{self._topic_name}-{self._count}")

    def new_mirror(self, link: ClusterLink, *, paused: bool = False) -> MirrorTopic:
        mirror = mirrors.create_mirror(SETUP, link, self.source_topic())
        return mirrors.pause_mirror(SETUP, mirror) if paused else mirror

    def mirror_in(self, link: ClusterLink, states, *, paused: bool = False) -> MirrorTopic:
        found = link.mirrors.filter(state__in=list(states)).order_by("pk").first()
        return found or self.new_mirror(link, paused=paused)

    def new_flow(self) -> MergeFlow:
        return merge_flows.create_flow(SETUP, self.link, self.source_topic())

    def flow_in(self, state: str) -> MergeFlow:
        found = self.link.flows.filter(state=state).order_by("pk").first()
        if found is None:
            found = self.new_flow()
            if state == MergeFlow.State.PAUSED:
                merge_flows.pause_flow(SETUP, found)
        return found

    def quarantined(self) -> MirrorTopic:
        """A mirror a fail back restored, with its quarantine topic left to delete (the state a
        restore leaves, made directly: the restore itself is test_reverse's)."""
        mirror = self.new_mirror(self.link)
        quarantine = self._make_topic(kafka.DESTINATION, f"{mirror.mirror_topic}.quarantine-1")
        report = {"kind": restore.KIND, "actor": "tests", "quarantine": quarantine}
        MirrorTopic.objects.filter(pk=mirror.pk).update(stop_report=report)
        return MirrorTopic.objects.get(pk=mirror.pk)

    def request(self, by) -> ApprovalRequest:
        """A PENDING promote request made by `by` (on `strict` if they would act at once)."""
        link = self.strict if acts_at_once(by, self.link) else self.link
        mirror = self.mirror_in(link, PROMOTABLE)
        actor = audit.Actor(user=by, name=by.get_username())
        asked = approvals.submit(actor, link, "promote", [mirror.mirror_topic], REASON)
        assert asked.request is not None, asked
        return asked.request


# Targets: each gives an object the action would succeed on; a fresh one only where the action
# would consume it (it is allowed, and done at once). -------------------------------------------


def a_new_name(w: World, user, allowed: bool) -> Target:
    return Target(name=w.name("matrix"))


def the_source_set_aside(w: World, user, allowed: bool) -> Target:
    """A new name for the source cluster, whose registration is set aside (its id blanked: a
    cluster is registered once) until `put_the_source_back`."""
    KafkaCluster.objects.filter(name="source").update(cluster_id="")
    return Target(name=w.name("matrix"))


def put_the_source_back(w: World, target: Target) -> None:
    KafkaCluster.objects.filter(name=target.name).delete()
    source = w._clusters["source"]
    KafkaCluster.objects.filter(pk=source.pk).update(cluster_id=source.cluster_id)


def a_gateway(w: World, user, allowed: bool) -> Target:
    """A gateway routing to the source that may route to the destination too (its proxy never
    started: `proxies_not_started`); its name the target's."""
    gateway = Gateway.objects.create(
        name=w.name("gateway"), port=29600 + 20 * Gateway.objects.count(), route=w.source
    )
    gateway.clusters.set([w.source, w.destination])
    return Target(name=gateway.name)


def gateway_form(w: World, t: Target) -> dict:
    """A new gateway's fields on the console's form."""
    body = gateway_body(w, t)
    return {
        "name": t.name,
        "address": body["address"],
        "clusters": body["cluster_names"],
        "route": body["route_cluster_name"],
    }


def gateway_body(w: World, t: Target) -> dict:
    """A new gateway, as the API takes it: an address no other gateway's ports hold."""
    return {
        "gateway_name": t.name,
        "address": f"127.0.0.1:{29900 + 20 * Gateway.objects.count()}",
        "cluster_names": [w.source.name, w.destination.name],
        "route_cluster_name": w.source.name,
    }


def an_own_token(w: World, user, allowed: bool) -> Target:
    return Target(token=create_token(SETUP, user, w.name("token"))[0])


def a_waiting_scenario_run(w: World, user, allowed: bool) -> Target:
    return Target(run=runner.start(registry.get("share-data"), SETUP))


def a_config_value(w: World, user, allowed: bool) -> Target:
    """A value the link's config does not have yet."""
    w.link.refresh_from_db()
    return Target(link=w.link, name=str(int(w.link.configs.get(CONFIG) or 5000) + 1))


def a_group_filter(w: World, user, allowed: bool) -> Target:
    """A consumer group filter the link's list does not hold yet."""
    return Target(link=w.link, name=w.name("group"))


def a_link_with_the_config_set(w: World, user, allowed: bool) -> Target:
    w.link.refresh_from_db()
    if CONFIG not in w.link.configs:
        links.alter_link_configs(SETUP, w.link, {CONFIG: "5000"})
    return Target(link=w.link)


def a_link_syncing_schemas(w: World, user, allowed: bool) -> Target:
    """The link, syncing schemas, its last run just now (a sync asked for forgets it)."""
    w.link.refresh_from_db()
    if w.link.config("schema.sync.enable") != "true":
        links.alter_link_configs(SETUP, w.link, {"schema.sync.enable": "true"})
    ClusterLink.objects.filter(pk=w.link.pk).update(schemas_synced_at=timezone.now())
    return Target(link=w.link)


def a_synced_subject(w: World, user, allowed: bool) -> Target:
    """A subject the link (syncing schemas) keeps in step, to make writable."""
    link = a_link_syncing_schemas(w, user, allowed).link
    subject = w.name("subject")
    SchemaSubjectSync.objects.create(link=link, subject=subject, state="IN_STEP", versions=[1])
    return Target(link=link, name=subject)


def an_active_link(w: World, user, allowed: bool) -> Target:
    return Target(link=w.mirrorless(LinkState.ACTIVE))


def a_paused_link(w: World, user, allowed: bool) -> Target:
    return Target(link=w.mirrorless(LinkState.PAUSED))


def a_link_to_delete(w: World, user, allowed: bool) -> Target:
    link = w.mirrorless(LinkState.PAUSED)
    if allowed and acts_at_once(user, link):
        link = w.new_link()
    return Target(link=link)


def a_link_of_its_own(w: World, user, allowed: bool) -> Target:
    return Target(link=w.new_link())


def a_new_operator(w: World, user, allowed: bool, *, disabled: bool = False) -> Target:
    """A user of their own to change (by name), so that the roles' users stay as they are."""
    person = user_admin.create_user(SETUP, w.name("user"), "operator")[0]
    if disabled:
        user_admin.disable(SETUP, person)
    return Target(name=person.get_username())


def a_disabled_operator(w: World, user, allowed: bool) -> Target:
    return a_new_operator(w, user, allowed, disabled=True)


def an_unmirrored_topic(w: World, user, allowed: bool) -> Target:
    return Target(link=w.link, name=w.source_topic())


def a_topic_to_import(w: World, user, allowed: bool) -> Target:
    """A topic a Replicator configuration names, over the link the import chooses (the oldest
    from the source: its approval policy decides)."""
    target = Target(name=w.source_topic())
    target.link = replicator_import.plan(w.destination, replicator(target)["configuration"]).link
    return target


def a_running_mirror(w: World, user, allowed: bool) -> Target:
    return Target(link=w.link, mirror=w.mirror_in(w.link, FOLLOWING - {State.PAUSED}))


def a_paused_mirror(w: World, user, allowed: bool) -> Target:
    return Target(link=w.link, mirror=w.mirror_in(w.link, [State.PAUSED], paused=True))


def an_active_flow(w: World, user, allowed: bool) -> Target:
    return Target(link=w.link, flow=w.flow_in(MergeFlow.State.ACTIVE))


def a_paused_flow(w: World, user, allowed: bool) -> Target:
    return Target(link=w.link, flow=w.flow_in(MergeFlow.State.PAUSED))


def a_flow_to_delete(w: World, user, allowed: bool) -> Target:
    flow = w.new_flow() if allowed else w.flow_in(MergeFlow.State.ACTIVE)
    return Target(link=w.link, flow=flow)


def a_mirror_to_delete(w: World, user, allowed: bool) -> Target:
    mirror = w.new_mirror(w.link) if allowed else w.mirror_in(w.link, FOLLOWING)
    return Target(link=w.link, mirror=mirror)


def a_mirror_to_stop(w: World, user, allowed: bool) -> Target:
    at_once = allowed and acts_at_once(user, w.link)
    mirror = w.new_mirror(w.link) if at_once else w.mirror_in(w.link, PROMOTABLE)
    return Target(link=w.link, mirror=mirror)


def a_mirror_to_reverse(w: World, user, allowed: bool) -> Target:
    at_once = allowed and acts_at_once(user, w.both)
    mirror = w.new_mirror(w.both) if at_once else w.mirror_in(w.both, [State.ACTIVE])
    return Target(link=w.both, mirror=mirror)


def a_topic_to_restore(w: World, user, allowed: bool) -> Target:
    """A failed-over mirror whose old source (on the link's other half, where the action is)
    is not being restored; a fresh one where the restore would start at once."""
    peer = links.peer_of(w.both)
    at_once = allowed and acts_at_once(user, peer)
    restored = set(peer.mirrors.values_list("mirror_topic", flat=True))
    mirror = (
        None
        if at_once
        else w.both.mirrors.filter(state=State.STOPPED)
        .exclude(source_topic__in=restored)
        .order_by("pk")
        .first()
    )
    return Target(link=peer, mirror=mirror or w.failed_over())


def a_quarantine_to_delete(w: World, user, allowed: bool) -> Target:
    """A restored mirror's quarantine; a fresh one where it would be deleted."""
    left = [m for m in w.link.mirrors.order_by("pk") if restore_quarantine.quarantine_of(m)]
    mirror = w.quarantined() if allowed or not left else left[0]
    return Target(link=w.link, mirror=mirror)


def a_mirror_to_break_glass_on(w: World, user, allowed: bool) -> Target:
    mirror = w.new_mirror(w.strict) if allowed else w.mirror_in(w.strict, PROMOTABLE)
    return Target(link=w.strict, mirror=mirror)


def someone_elses_request(w: World, user, allowed: bool) -> Target:
    request = w.request(w.users["operator"])
    return Target(link=request.link, request=request)


def an_own_request(w: World, user, allowed: bool) -> Target:
    """The role's own request where it may make one; else an operator's."""
    request = w.request(user if allowed else w.users["operator"])
    return Target(link=request.link, request=request)


# What came of an action, as each interface shows it. -----------------------------------------


@dataclass
class Answer:
    kind: str  # "done", "asked" (a PENDING approval request) or "refused"; "failed" otherwise
    status: int  # HTTP status, or the tool's exit status
    message: str = ""


def console_answer(response) -> Answer:
    """A refusal by the page's own action is a 403; one inside the change is flashed (or shown
    on the form it came back with); a change done or asked for redirects."""
    if response.status_code == 403:
        return Answer("refused", 403, html.unescape(response.content.decode()))
    notes = list(get_messages(response.wsgi_request))
    errors = [str(m) for m in notes if m.level == messages.ERROR]
    if response.status_code == 302 and not errors:
        asked = any(str(m).startswith("Asked for approval") for m in notes)
        return Answer("asked" if asked else "done", 302, " ".join(map(str, notes)))
    shown = " ".join(errors) or html.unescape(response.content.decode())
    return Answer("refused", response.status_code, shown)


def api_answer(response) -> Answer:
    body = response.json() if response.content else {}
    status = response.status_code
    if status == 202 and body.get("kind") in ("MirrorVerificationList", "SchemaSyncData"):
        return Answer("done", status)  # verifications or a schema sync started, by a worker
    if body.get("kind") == "ReplicatorImport" and body["flows"][0]["approval_request_id"]:
        return Answer("asked", status)  # each flow asked for in a request of its own
    if status == 202:
        request = body["approval_request"]
        assert request["state"] == "PENDING", request
        return Answer("asked", status)
    if status in (200, 201, 204):
        # pause, resume, promote and failover report each topic on its own, with HTTP 200
        errors = [
            d["error_message"] for d in body.get("data", []) if d.get("error_code") is not None
        ]
        return Answer("failed" if errors else "done", status, " ".join(errors))
    return Answer("refused" if status == 403 else "failed", status, body.get("message", ""))


def cli_answer(status: int, out: str, err: str) -> Answer:
    if status != 0:
        return Answer("refused", status, err)
    asked = re.search(
        r"needs \d+ approval\(s\): request \d+|waits for approval \(request \d+\)", out
    )
    return Answer("asked" if asked else "done", 0, out)


@dataclass(frozen=True)
class Interface:
    name: str
    gate_status: int | None  # the status of a refusal by the route's own action
    inner_status: int | None  # and of one inside the action (an operator breaking glass)


CONSOLE_UI = Interface("console", 403, None)  # the form comes back with the policy's message
API_UI = Interface("API", 403, 403)
CLI_UI = Interface("CLI", None, None)  # exit status 1 and the message on stderr


# The tables. ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    route: Hashable  # console: URL name; API: (path, METHOD); CLI: (tool, option)
    policy: tuple[str, ...]  # the policy actions it needs, in the order checked: the route's first
    event: str  # the audited action when it is done
    target: Callable[[World, Any, bool], Target]
    perform: Callable[[Any, World, Target], Answer]
    asked_event: str | None = None  # subject to approval: the audited action when asked for
    # a policy action checked inside the action -> (the audited action, the refusal message)
    inner: dict[str, tuple[str, str]] = field(default_factory=dict)
    # puts back what the target set aside for the action (once it is checked)
    undo: Callable[[World, Target], None] | None = None


BREAK_GLASS = {"request.override": ("request.failover", "Only an admin may break glass.")}


def link_args(t: Target) -> list[str]:
    return [t.link.destination.name, t.link.name]


def mirror_args(t: Target) -> list[str]:
    return [t.mirror.destination.name, t.mirror.mirror_topic]


def flow_args(t: Target) -> list[str]:
    return [*link_args(t), t.flow.name]


def replicator(t: Target) -> dict[str, str]:
    """A Replicator configuration copying the target's topic over its link, renamed."""
    return {
        "configuration": "\n".join(
            [
                f"name={t.name}",
                f"topic.whitelist={t.name}",
                "topic.rename.format=${topic}.imported",
                f"src.kafka.bootstrap.servers={kafka.SOURCE.bootstrap}",
            ]
        )
    }


def replicator_file(t: Target) -> str:
    path = Path(tempfile.mkdtemp()) / "replicator.properties"
    path.write_text(replicator(t)["configuration"])
    return str(path)


def stop_form(t: Target) -> dict[str, str]:
    """A promote or failover asked for properly: a reason and the mirror's name typed."""
    return {"reason": REASON, "confirm_name": t.mirror.mirror_topic}


def post(client: Client, url_name: str, args: list, data: dict | None = None) -> Answer:
    # Redirects are not followed, so no page shows (and drops) the flashed messages: forget
    # them, so that the answer is read from this POST's messages alone.
    client.cookies.pop("messages", None)
    session = client.session
    if session.pop("_messages", None) is not None:
        session.save()
    return console_answer(client.post(reverse(url_name, args=args), data or {}))


CONSOLE = [
    Row(
        "flows of a Replicator configuration",
        "replicator-import",
        ("flow.manage",),
        "flow.create",
        a_topic_to_import,
        lambda c, w, t: post(
            c,
            "replicator-import",
            [t.link.destination.name],
            {"op": "create", **replicator(t)},
        ),
        asked_event="request.create-flow",
    ),
    Row(
        "flow create",
        "flow-create",
        ("flow.manage",),
        "flow.create",
        an_unmirrored_topic,
        lambda c, w, t: post(
            c,
            "flow-create",
            link_args(t),
            {
                "source_topic": t.name,
                "destination_topic": "",
                "name": "",
                "mapping": "",
                "reason": REASON,
            },
        ),
        asked_event="request.create-flow",
    ),
    Row(
        "flow pause",
        "flow-pause",
        ("flow.manage",),
        "flow.pause",
        an_active_flow,
        lambda c, w, t: post(c, "flow-pause", flow_args(t)),
    ),
    Row(
        "flow resume",
        "flow-resume",
        ("flow.manage",),
        "flow.resume",
        a_paused_flow,
        lambda c, w, t: post(c, "flow-resume", flow_args(t)),
    ),
    Row(
        "flow delete",
        "flow-delete",
        ("flow.manage",),
        "flow.delete",
        a_flow_to_delete,
        lambda c, w, t: post(
            c, "flow-delete", flow_args(t), {"confirm_name": t.flow.name, "reason": REASON}
        ),
        asked_event="request.delete-flow",
    ),
    Row(
        "token create",
        "account",
        ("token.manage",),
        "token.create",
        a_new_name,
        lambda c, w, t: post(c, "account", [], {"name": t.name}),
    ),
    Row(
        "token revoke",
        "token-revoke",
        ("token.manage",),
        "token.revoke",
        an_own_token,
        lambda c, w, t: post(c, "token-revoke", [t.token.pk]),
    ),
    Row(
        "cluster register",
        "cluster-create",
        ("cluster.register",),
        "cluster.register",
        the_source_set_aside,
        lambda c, w, t: post(
            c,
            "cluster-create",
            [],
            {"name": t.name, "bootstrap_servers": kafka.SOURCE.bootstrap, "client_config": ""},
        ),
        undo=put_the_source_back,
    ),
    Row(
        "gateway define",
        "gateway-create",
        ("gateway.manage",),
        "gateway.define",
        a_new_name,
        lambda c, w, t: post(c, "gateway-create", [], gateway_form(w, t)),
    ),
    Row(
        "gateway change",
        "gateway-change",
        ("gateway.manage",),
        "gateway.change",
        a_gateway,
        lambda c, w, t: post(
            c, "gateway-change", [t.name], {**gateway_form(w, t), "clusters": [w.source.name]}
        ),
    ),
    Row(
        "gateway switch",
        "gateway-switch",
        ("gateway.manage",),
        "gateway.switch",
        a_gateway,
        lambda c, w, t: post(
            c, "gateway-switch", [t.name, "destination"], {"confirm_name": t.name}
        ),
    ),
    Row(
        "gateway delete",
        "gateway-delete",
        ("gateway.manage",),
        "gateway.delete",
        a_gateway,
        lambda c, w, t: post(c, "gateway-delete", [t.name], {"confirm_name": t.name}),
    ),
    Row(
        "cluster schema registry",
        "cluster-schema-registry",
        ("cluster.register",),
        "cluster.schema_registry",
        a_new_name,
        lambda c, w, t: post(
            c,
            "cluster-schema-registry",
            ["destination"],
            {
                "schema_registry_url": schema_registries.DESTINATION.url,
                "schema_registry_username": t.name,
            },
        ),
    ),
    Row(
        "link create",
        "link-create",
        ("link.manage",),
        "link.create",
        a_new_name,
        lambda c, w, t: post(
            c,
            "link-create",
            [],
            {
                "name": t.name,
                "destination": w.destination.pk,
                "source": "",
                "configs": f"bootstrap.servers={kafka.SOURCE.bootstrap}\ncluster.link.paused=true",
            },
        ),
    ),
    Row(
        "link schema subjects promote",
        "link-schemas-promote",
        ("mirror.stop",),
        "schema.subjects_promoted",
        a_synced_subject,
        lambda c, w, t: post(
            c, "link-schemas-promote", link_args(t), {"subjects": t.name, "reason": REASON}
        ),
        asked_event="request.promote-subjects",
    ),
    Row(
        "link schemas sync",
        "link-schemas-sync",
        ("link.manage",),
        "link.schema_sync_requested",
        a_link_syncing_schemas,
        lambda c, w, t: post(c, "link-schemas-sync", link_args(t)),
    ),
    Row(
        "link configs alter",
        "link-configs-alter",
        ("link.manage",),
        "link.alter_configs",
        a_config_value,
        lambda c, w, t: post(
            c, "link-configs-alter", link_args(t), {"set": f"{CONFIG}={t.name}", "reset": ""}
        ),
    ),
    Row(
        "link pause by its config",  # one event: link.alter_configs, and no link.pause besides
        "link-configs-alter",
        ("link.manage",),
        "link.alter_configs",
        an_active_link,
        lambda c, w, t: post(
            c, "link-configs-alter", link_args(t), {"set": f"{PAUSED}=true", "reset": ""}
        ),
    ),
    Row(
        "link filters save",  # the filter editor of the link page: a link config change
        "link-filters-save",
        ("link.manage",),
        "link.alter_configs",
        a_group_filter,
        lambda c, w, t: post(
            c,
            "link-filters-save",
            link_args(t),
            {
                "list": "groups",
                "mode": "rows",
                "name": t.name,
                "pattern_type": "LITERAL",
                "filter_type": "INCLUDE",
            },
        ),
    ),
    Row(
        "link pause",
        "link-pause",
        ("link.manage",),
        "link.pause",
        an_active_link,
        lambda c, w, t: post(c, "link-pause", link_args(t)),
    ),
    Row(
        "link resume",
        "link-resume",
        ("link.manage",),
        "link.resume",
        a_paused_link,
        lambda c, w, t: post(c, "link-resume", link_args(t)),
    ),
    Row(
        "link delete",
        "link-delete",
        ("link.delete",),
        "link.delete",
        a_link_to_delete,
        lambda c, w, t: post(
            c, "link-delete", link_args(t), {"reason": REASON, "confirm_name": t.link.name}
        ),
        asked_event="request.delete-link",
    ),
    Row(
        "link approval policy",
        "link-approval-policy",
        ("approval_policy.manage",),
        "link.approval_policy",
        a_link_of_its_own,
        # from two approvals with an admin override to one without
        lambda c, w, t: post(c, "link-approval-policy", link_args(t), {"approvals_required": 1}),
    ),
    Row(
        "link RPO target",
        "link-rpo-target",
        ("link.manage",),
        "link.rpo_target",
        a_link_of_its_own,
        lambda c, w, t: post(c, "link-rpo-target", link_args(t), {"rpo_target_seconds": 90}),
    ),
    Row(
        "link drill now",
        "link-drill",
        ("drill.run",),
        "drill.start",
        an_active_link,
        lambda c, w, t: post(c, "link-drill", link_args(t)),
    ),
    Row(
        "link drill schedule",
        "link-drill-schedule",
        ("drill.run",),
        "drill.schedule",
        a_link_of_its_own,
        lambda c, w, t: post(
            c, "link-drill-schedule", link_args(t), {"every_hours": 12, "enabled": "on"}
        ),
    ),
    Row(
        "mirror create",
        "mirror-create",
        ("mirror.manage",),
        "mirror.create",
        an_unmirrored_topic,
        lambda c, w, t: post(
            c,
            "mirror-create",
            link_args(t),
            {"source_topic": t.name, "replication_factor": "", "configs": ""},
        ),
    ),
    Row(
        "mirror pause",
        "mirror-pause",
        ("mirror.manage",),
        "mirror.pause",
        a_running_mirror,
        lambda c, w, t: post(c, "mirror-pause", mirror_args(t)),
    ),
    Row(
        "mirror verify",
        "mirror-verify",
        ("mirror.manage",),
        "mirror.verify",
        a_running_mirror,
        lambda c, w, t: post(c, "mirror-verify", mirror_args(t), {"from_offset": "0"}),
    ),
    Row(
        "mirror resume",
        "mirror-resume",
        ("mirror.manage",),
        "mirror.resume",
        a_paused_mirror,
        lambda c, w, t: post(c, "mirror-resume", mirror_args(t)),
    ),
    Row(
        "link's mirrors paused at once",
        "link-mirrors-switch",
        ("mirror.manage",),
        "mirror.pause",
        a_running_mirror,
        lambda c, w, t: post(
            c, "link-mirrors-switch", [*link_args(t), "pause"], {"topics": t.mirror.mirror_topic}
        ),
    ),
    Row(
        "link's mirrors failed over at once",
        "link-mirrors-stop",
        ("mirror.stop",),
        "mirror.failover",
        a_mirror_to_stop,
        lambda c, w, t: post(
            c,
            "link-mirrors-stop",
            [*link_args(t), "failover"],
            {"topics": t.mirror.mirror_topic, "reason": REASON, "confirm_name": t.link.name},
        ),
        asked_event="request.failover",
    ),
    Row(
        "mirror delete",
        "mirror-delete",
        ("mirror.delete",),
        "mirror.delete",
        a_mirror_to_delete,
        lambda c, w, t: post(
            c, "mirror-delete", mirror_args(t), {"confirm_name": t.mirror.mirror_topic}
        ),
    ),
    Row(
        "mirror quarantine delete",
        "mirror-quarantine-delete",
        ("mirror.delete",),
        "mirror.quarantine_delete",
        a_quarantine_to_delete,
        lambda c, w, t: post(
            c,
            "mirror-quarantine-delete",
            mirror_args(t),
            {"confirm_name": restore_quarantine.quarantine_of(t.mirror)},
        ),
    ),
    Row(
        "mirror promote",
        "mirror-promote",
        ("mirror.stop",),
        "mirror.promote",
        a_mirror_to_stop,
        lambda c, w, t: post(c, "mirror-promote", mirror_args(t), stop_form(t)),
        asked_event="request.promote",
    ),
    *[
        Row(
            f"mirror {action}",
            url_name,
            ("mirror.stop",),
            f"mirror.{action}",
            a_mirror_to_reverse,
            lambda c, w, t, url_name=url_name: post(c, url_name, mirror_args(t), stop_form(t)),
            asked_event=f"request.{action}",
        )
        for action, url_name in (
            ("reverse-and-start-mirror", "mirror-reverse"),
            ("reverse-and-pause-mirror", "mirror-reverse-paused"),
        )
    ],
    Row(
        "mirror truncate-and-restore",
        "mirror-fail-back",
        ("mirror.stop",),
        "mirror.truncate-and-restore",
        a_topic_to_restore,
        lambda c, w, t: post(c, "mirror-fail-back", mirror_args(t), stop_form(t)),
        asked_event="request.truncate-and-restore",
    ),
    Row(
        "mirror failover",
        "mirror-failover",
        ("mirror.stop",),
        "mirror.failover",
        a_mirror_to_stop,
        lambda c, w, t: post(c, "mirror-failover", mirror_args(t), stop_form(t)),
        asked_event="request.failover",
    ),
    Row(
        "mirror failover, breaking glass",
        "mirror-failover",
        ("mirror.stop", "request.override"),
        "mirror.failover",
        a_mirror_to_break_glass_on,
        lambda c, w, t: post(
            c, "mirror-failover", mirror_args(t), {**stop_form(t), "break_glass": "on"}
        ),
        inner=BREAK_GLASS,
    ),
    Row(
        "request approve",
        "approval-approve",
        ("request.approve",),
        "request.approve",
        someone_elses_request,
        lambda c, w, t: post(c, "approval-approve", [t.request.pk]),
    ),
    Row(
        "request reject",
        "approval-reject",
        ("request.approve",),
        "request.reject",
        someone_elses_request,
        lambda c, w, t: post(c, "approval-reject", [t.request.pk], {"reason": REASON}),
    ),
    Row(
        "request withdraw",
        "approval-withdraw",
        ("mirror.stop",),
        "request.withdraw",
        an_own_request,
        lambda c, w, t: post(c, "approval-withdraw", [t.request.pk]),
    ),
    Row(
        "user create",
        "user-create",
        ("user.manage",),
        "user.create",
        a_new_name,
        lambda c, w, t: post(c, "user-create", [], {"username": t.name, "role": "operator"}),
    ),
    Row(
        "user role",
        "user-role",
        ("user.manage",),
        "user.role",
        a_new_operator,
        lambda c, w, t: post(c, "user-role", [t.name], {"role": "viewer"}),
    ),
    Row(
        "user disable",
        "user-disable",
        ("user.manage",),
        "user.disable",
        a_new_operator,
        lambda c, w, t: post(c, "user-disable", [t.name]),
    ),
    Row(
        "user enable",
        "user-enable",
        ("user.manage",),
        "user.enable",
        a_disabled_operator,
        lambda c, w, t: post(c, "user-enable", [t.name]),
    ),
    Row(
        "user password",
        "user-password",
        ("user.manage",),
        "user.password",
        a_new_operator,
        lambda c, w, t: post(c, "user-password", [t.name]),
    ),
    Row(
        "user delete",
        "user-delete",
        ("user.manage",),
        "user.delete",
        a_new_operator,
        lambda c, w, t: post(c, "user-delete", [t.name], {"confirm_name": t.name}),
    ),
    Row(
        "scenario start",  # a guided run: it waits for its first step, so no task is sent
        "scenario-start",
        ("scenario.run",),
        "scenario.start",
        a_new_name,
        lambda c, w, t: post(c, "scenario-start", ["share-data"], {"how": "guided"}),
    ),
    Row(
        "scenario next step",  # the step itself is the scenario worker's (test_scenarios)
        "scenario-run-go-on",
        ("scenario.run",),
        "scenario.next",
        a_waiting_scenario_run,
        lambda c, w, t: without_tasks(
            lambda: post(c, "scenario-run-go-on", [t.run.pk, runner.NEXT])
        ),
    ),
]


def without_tasks(perform: Callable[[], Answer]) -> Answer:
    """`perform`, with the scenario task it sends kept out of the tests' Redis."""
    with mock.patch("console.views.scenarios.run_scenario.delay") as delay:
        answer = perform()
    assert delay.call_count == (1 if answer.kind == "done" else 0)
    return answer


def call(client: Client, method: str, path: str, body: dict | None = None) -> Answer:
    data = json.dumps(body) if body is not None else ""
    return api_answer(getattr(client, method.lower())(path, data, content_type="application/json"))


def links_url(w: World) -> str:
    return f"/kafka/v3/clusters/{w.destination.cluster_id}/links"


def link_url(w: World, t: Target, tail: str = "") -> str:
    return f"{links_url(w)}/{t.link.name}{tail}"


def request_url(w: World, t: Target, verb: str) -> str:
    return f"/kafka/v3/clusters/{w.destination.cluster_id}/approval-requests/{t.request.pk}:{verb}"


def names_of(t: Target, **more) -> dict:
    return {"mirror_topic_names": [t.mirror.mirror_topic], **more}


LINK_PATH = "/clusters/{cluster_id}/links/{link_name}"
REQUEST_PATH = "/clusters/{cluster_id}/approval-requests/{request_id}"

API = [
    Row(
        "gateway define",
        ("/gateways", "POST"),
        ("gateway.manage",),
        "gateway.define",
        a_new_name,
        lambda c, w, t: call(c, "POST", "/kafka/v3/gateways", gateway_body(w, t)),
    ),
    Row(
        "gateway change",
        ("/gateways/{gateway_name}", "PATCH"),
        ("gateway.manage",),
        "gateway.change",
        a_gateway,
        lambda c, w, t: call(
            c, "PATCH", f"/kafka/v3/gateways/{t.name}", {"cluster_names": ["source"]}
        ),
    ),
    Row(
        "gateway switch",
        ("/gateways/{gateway_name}:switch", "POST"),
        ("gateway.manage",),
        "gateway.switch",
        a_gateway,
        lambda c, w, t: call(
            c, "POST", f"/kafka/v3/gateways/{t.name}:switch", {"cluster_name": "destination"}
        ),
    ),
    Row(
        "gateway delete",
        ("/gateways/{gateway_name}", "DELETE"),
        ("gateway.manage",),
        "gateway.delete",
        a_gateway,
        lambda c, w, t: call(c, "DELETE", f"/kafka/v3/gateways/{t.name}"),
    ),
    Row(
        "flows of a Replicator configuration",
        ("/clusters/{cluster_id}/flows:import-replicator", "POST"),
        ("flow.manage",),
        "flow.create",
        a_topic_to_import,
        lambda c, w, t: call(
            c,
            "POST",
            f"/kafka/v3/clusters/{w.destination.cluster_id}/flows:import-replicator",
            replicator(t),
        ),
        asked_event="request.create-flow",
    ),
    Row(
        "flow create",
        (LINK_PATH + "/flows", "POST"),
        ("flow.manage",),
        "flow.create",
        an_unmirrored_topic,
        lambda c, w, t: call(
            c, "POST", link_url(w, t, "/flows"), {"source_topic_name": t.name, "reason": REASON}
        ),
        asked_event="request.create-flow",
    ),
    *[
        Row(
            f"flow {verb}",
            (LINK_PATH + f"/flows/{{flow_name}}:{verb}", "POST"),
            ("flow.manage",),
            f"flow.{verb}",
            target,
            lambda c, w, t, verb=verb: call(
                c, "POST", link_url(w, t, f"/flows/{t.flow.name}:{verb}")
            ),
        )
        for verb, target in (("pause", an_active_flow), ("resume", a_paused_flow))
    ],
    Row(
        "flow delete",
        (LINK_PATH + "/flows/{flow_name}", "DELETE"),
        ("flow.manage",),
        "flow.delete",
        a_flow_to_delete,
        lambda c, w, t: call(c, "DELETE", link_url(w, t, f"/flows/{t.flow.name}?reason=why")),
        asked_event="request.delete-flow",
    ),
    Row(
        "link create",
        ("/clusters/{cluster_id}/links", "POST"),
        ("link.manage",),
        "link.create",
        a_new_name,
        lambda c, w, t: call(
            c,
            "POST",
            f"{links_url(w)}?link_name={t.name}",
            {
                "configs": [
                    {"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap},
                    {"name": "cluster.link.paused", "value": "true"},
                ]
            },
        ),
    ),
    Row(
        "link delete",
        (LINK_PATH, "DELETE"),
        ("link.delete",),
        "link.delete",
        a_link_to_delete,
        lambda c, w, t: call(c, "DELETE", link_url(w, t, "?reason=role+matrix")),
        asked_event="request.delete-link",
    ),
    Row(
        "link schema subjects promote",
        (LINK_PATH + "/schemas:promote", "POST"),
        ("mirror.stop",),
        "schema.subjects_promoted",
        a_synced_subject,
        lambda c, w, t: call(
            c, "POST", link_url(w, t, "/schemas:promote"), {"subjects": [t.name], "reason": REASON}
        ),
        asked_event="request.promote-subjects",
    ),
    Row(
        "link schemas sync",
        (LINK_PATH + "/schemas:sync", "POST"),
        ("link.manage",),
        "link.schema_sync_requested",
        a_link_syncing_schemas,
        lambda c, w, t: call(c, "POST", link_url(w, t, "/schemas:sync")),
    ),
    Row(
        "link configs alter",
        (LINK_PATH + "/configs:alter", "PUT"),
        ("link.manage",),
        "link.alter_configs",
        a_config_value,
        lambda c, w, t: call(
            c,
            "PUT",
            link_url(w, t, "/configs:alter"),
            {"data": [{"name": CONFIG, "value": t.name}]},
        ),
    ),
    Row(
        "link RPO target",
        (LINK_PATH + "/rpo-target", "PUT"),
        ("link.manage",),
        "link.rpo_target",
        a_link_of_its_own,
        lambda c, w, t: call(c, "PUT", link_url(w, t, "/rpo-target"), {"rpo_target_seconds": 90}),
    ),
    Row(
        "link config set",
        (LINK_PATH + "/configs/{config_name}", "PUT"),
        ("link.manage",),
        "link.alter_configs",
        a_config_value,
        lambda c, w, t: call(c, "PUT", link_url(w, t, f"/configs/{CONFIG}"), {"value": t.name}),
    ),
    Row(
        "link config reset",
        (LINK_PATH + "/configs/{config_name}", "DELETE"),
        ("link.manage",),
        "link.alter_configs",
        a_link_with_the_config_set,
        lambda c, w, t: call(c, "DELETE", link_url(w, t, f"/configs/{CONFIG}")),
    ),
    Row(
        "link pause by its configs",  # one event: link.alter_configs, and no link.pause besides
        (LINK_PATH + "/configs:alter", "PUT"),
        ("link.manage",),
        "link.alter_configs",
        an_active_link,
        lambda c, w, t: call(
            c,
            "PUT",
            link_url(w, t, "/configs:alter"),
            {"data": [{"name": PAUSED, "value": "true"}]},
        ),
    ),
    Row(
        "link pause by its config",
        (LINK_PATH + "/configs/{config_name}", "PUT"),
        ("link.manage",),
        "link.alter_configs",
        an_active_link,
        lambda c, w, t: call(c, "PUT", link_url(w, t, f"/configs/{PAUSED}"), {"value": "true"}),
    ),
    Row(
        "mirror create",
        (LINK_PATH + "/mirrors", "POST"),
        ("mirror.manage",),
        "mirror.create",
        an_unmirrored_topic,
        lambda c, w, t: call(c, "POST", link_url(w, t, "/mirrors"), {"source_topic_name": t.name}),
    ),
    Row(
        "mirror pause",
        (LINK_PATH + "/mirrors:pause", "POST"),
        ("mirror.manage",),
        "mirror.pause",
        a_running_mirror,
        lambda c, w, t: call(c, "POST", link_url(w, t, "/mirrors:pause"), names_of(t)),
    ),
    Row(
        "mirror verify",
        (LINK_PATH + "/mirrors:verify", "POST"),
        ("mirror.manage",),
        "mirror.verify",
        a_running_mirror,
        lambda c, w, t: call(c, "POST", link_url(w, t, "/mirrors:verify"), names_of(t)),
    ),
    Row(
        "mirror resume",
        (LINK_PATH + "/mirrors:resume", "POST"),
        ("mirror.manage",),
        "mirror.resume",
        a_paused_mirror,
        lambda c, w, t: call(c, "POST", link_url(w, t, "/mirrors:resume"), names_of(t)),
    ),
    Row(
        "mirror promote",
        (LINK_PATH + "/mirrors:promote", "POST"),
        ("mirror.stop",),
        "mirror.promote",
        a_mirror_to_stop,
        lambda c, w, t: call(
            c, "POST", link_url(w, t, "/mirrors:promote"), names_of(t, reason=REASON)
        ),
        asked_event="request.promote",
    ),
    Row(
        "mirror failover",
        (LINK_PATH + "/mirrors:failover", "POST"),
        ("mirror.stop",),
        "mirror.failover",
        a_mirror_to_stop,
        lambda c, w, t: call(
            c, "POST", link_url(w, t, "/mirrors:failover"), names_of(t, reason=REASON)
        ),
        asked_event="request.failover",
    ),
    *[
        Row(
            f"mirror {action}",
            (LINK_PATH + f"/mirrors:{action}", "POST"),
            ("mirror.stop",),
            f"mirror.{action}",
            a_mirror_to_reverse,
            lambda c, w, t, action=action: call(
                c, "POST", link_url(w, t, f"/mirrors:{action}"), names_of(t, reason=REASON)
            ),
            asked_event=f"request.{action}",
        )
        for action in ("reverse-and-start-mirror", "reverse-and-pause-mirror")
    ],
    Row(
        "mirror truncate-and-restore",
        (LINK_PATH + "/mirrors:truncate-and-restore", "POST"),
        ("mirror.stop",),
        "mirror.truncate-and-restore",
        a_topic_to_restore,
        lambda c, w, t: call(
            c,
            "POST",
            f"/kafka/v3/clusters/{t.link.destination.cluster_id}/links/{t.link.name}"
            "/mirrors:truncate-and-restore",
            {"mirror_topic_names": [t.mirror.source_topic], "reason": REASON},
        ),
        asked_event="request.truncate-and-restore",
    ),
    Row(
        "mirror failover, breaking glass",
        (LINK_PATH + "/mirrors:failover", "POST"),
        ("mirror.stop", "request.override"),
        "mirror.failover",
        a_mirror_to_break_glass_on,
        lambda c, w, t: call(
            c,
            "POST",
            link_url(w, t, "/mirrors:failover"),
            names_of(t, reason=REASON, break_glass=True),
        ),
        inner=BREAK_GLASS,
    ),
    Row(
        "request approve",
        (REQUEST_PATH + ":approve", "POST"),
        ("request.approve",),
        "request.approve",
        someone_elses_request,
        lambda c, w, t: call(c, "POST", request_url(w, t, "approve")),
    ),
    Row(
        "request reject",
        (REQUEST_PATH + ":reject", "POST"),
        ("request.approve",),
        "request.reject",
        someone_elses_request,
        lambda c, w, t: call(c, "POST", request_url(w, t, "reject"), {"reason": REASON}),
    ),
    Row(
        "request withdraw",
        (REQUEST_PATH + ":withdraw", "POST"),
        ("mirror.stop",),
        "request.withdraw",
        an_own_request,
        lambda c, w, t: call(c, "POST", request_url(w, t, "withdraw")),
    ),
]


def at(w: World) -> list[str]:
    return ["--bootstrap-server", kafka.DESTINATION.bootstrap]


CLI = [
    Row(
        "gateway define",
        ("isthmus-gateways", "--create"),
        ("gateway.manage",),
        "gateway.define",
        a_new_name,
        lambda run, w, t: run(
            "isthmus-gateways",
            "--create",
            "--gateway",
            t.name,
            "--address",
            gateway_body(w, t)["address"],
            "--clusters",
            "source,destination",
            "--route",
            "source",
        ),
    ),
    Row(
        "gateway change",
        ("isthmus-gateways", "--alter"),
        ("gateway.manage",),
        "gateway.change",
        a_gateway,
        lambda run, w, t: run(
            "isthmus-gateways", "--alter", "--gateway", t.name, "--clusters", "source"
        ),
    ),
    Row(
        "gateway switch",
        ("isthmus-gateways", "--switch"),
        ("gateway.manage",),
        "gateway.switch",
        a_gateway,
        lambda run, w, t: run(
            "isthmus-gateways", "--switch", "--gateway", t.name, "--cluster", "destination"
        ),
    ),
    Row(
        "gateway delete",
        ("isthmus-gateways", "--delete"),
        ("gateway.manage",),
        "gateway.delete",
        a_gateway,
        lambda run, w, t: run("isthmus-gateways", "--delete", "--gateway", t.name),
    ),
    Row(
        "flows of a Replicator configuration",
        ("kafka-merge-flows", "--import-replicator"),
        ("flow.manage",),
        "flow.create",
        a_topic_to_import,
        lambda run, w, t: run(
            "kafka-merge-flows", *at(w), "--import-replicator", replicator_file(t)
        ),
        asked_event="request.create-flow",
    ),
    Row(
        "flow create",
        ("kafka-merge-flows", "--create"),
        ("flow.manage",),
        "flow.create",
        an_unmirrored_topic,
        lambda run, w, t: run(
            "kafka-merge-flows",
            *at(w),
            "--create",
            "--link",
            t.link.name,
            "--source-topic",
            t.name,
            "--reason",
            REASON,
        ),
        asked_event="request.create-flow",
    ),
    *[
        Row(
            f"flow {verb}",
            ("kafka-merge-flows", f"--{verb}"),
            ("flow.manage",),
            f"flow.{verb}",
            target,
            lambda run, w, t, verb=verb: run(
                "kafka-merge-flows",
                *at(w),
                f"--{verb}",
                "--link",
                t.link.name,
                "--flow",
                t.flow.name,
            ),
        )
        for verb, target in (("pause", an_active_flow), ("resume", a_paused_flow))
    ],
    Row(
        "flow delete",
        ("kafka-merge-flows", "--delete"),
        ("flow.manage",),
        "flow.delete",
        a_flow_to_delete,
        lambda run, w, t: run(
            "kafka-merge-flows",
            *at(w),
            "--delete",
            "--link",
            t.link.name,
            "--flow",
            t.flow.name,
            "--reason",
            REASON,
        ),
        asked_event="request.delete-flow",
    ),
    Row(
        "link create",
        ("kafka-cluster-links", "--create"),
        ("link.manage",),
        "link.create",
        a_new_name,
        lambda run, w, t: run(
            "kafka-cluster-links",
            *at(w),
            "--create",
            "--link",
            t.name,
            "--config",
            f"bootstrap.servers={kafka.SOURCE.bootstrap},cluster.link.paused=true",
        ),
    ),
    Row(
        "link delete",
        ("kafka-cluster-links", "--delete"),
        ("link.delete",),
        "link.delete",
        a_link_to_delete,
        lambda run, w, t: run(
            "kafka-cluster-links", *at(w), "--delete", "--link", t.link.name, "--reason", REASON
        ),
        asked_event="request.delete-link",
    ),
    Row(
        "link schema subjects promote",
        ("kafka-schema-links", "--promote"),
        ("mirror.stop",),
        "schema.subjects_promoted",
        a_synced_subject,
        lambda run, w, t: run(
            "kafka-schema-links",
            *at(w),
            "--promote",
            "--link",
            t.link.name,
            "--subjects",
            t.name,
            "--reason",
            REASON,
        ),
        asked_event="request.promote-subjects",
    ),
    Row(
        "link schemas sync",
        ("kafka-schema-links", "--sync"),
        ("link.manage",),
        "link.schema_sync_requested",
        a_link_syncing_schemas,
        lambda run, w, t: run("kafka-schema-links", *at(w), "--sync", "--link", t.link.name),
    ),
    Row(
        "link configs alter",
        ("kafka-configs", "--alter"),
        ("link.manage",),
        "link.alter_configs",
        a_config_value,
        lambda run, w, t: run(
            "kafka-configs",
            *at(w),
            "--alter",
            "--cluster-link",
            t.link.name,
            "--add-config",
            f"{CONFIG}={t.name}",
        ),
    ),
    Row(
        "link pause by its config",  # one event: link.alter_configs, and no link.pause besides
        ("kafka-configs", "--alter"),
        ("link.manage",),
        "link.alter_configs",
        an_active_link,
        lambda run, w, t: run(
            "kafka-configs",
            *at(w),
            "--alter",
            "--cluster-link",
            t.link.name,
            "--add-config",
            f"{PAUSED}=true",
        ),
    ),
    Row(
        "link resume by its config",  # one event: link.alter_configs, and no link.resume besides
        ("kafka-configs", "--alter"),
        ("link.manage",),
        "link.alter_configs",
        a_paused_link,
        lambda run, w, t: run(
            "kafka-configs",
            *at(w),
            "--alter",
            "--cluster-link",
            t.link.name,
            "--delete-config",
            PAUSED,
        ),
    ),
    Row(
        "mirror create",
        ("kafka-mirrors", "--create"),
        ("mirror.manage",),
        "mirror.create",
        an_unmirrored_topic,
        lambda run, w, t: run(
            "kafka-mirrors", *at(w), "--create", "--mirror-topic", t.name, "--link", t.link.name
        ),
    ),
    Row(
        "mirror pause",
        ("kafka-mirrors", "--pause"),
        ("mirror.manage",),
        "mirror.pause",
        a_running_mirror,
        lambda run, w, t: run(
            "kafka-mirrors", *at(w), "--pause", "--topics", t.mirror.mirror_topic
        ),
    ),
    Row(
        "mirror verify",
        ("kafka-mirrors", "--verify"),
        ("mirror.manage",),
        "mirror.verify",
        a_running_mirror,
        lambda run, w, t: run(
            "kafka-mirrors", *at(w), "--verify", "--no-wait", "--topics", t.mirror.mirror_topic
        ),
    ),
    Row(
        "mirror unpause",
        ("kafka-mirrors", "--unpause"),
        ("mirror.manage",),
        "mirror.resume",
        a_paused_mirror,
        lambda run, w, t: run(
            "kafka-mirrors", *at(w), "--unpause", "--topics", t.mirror.mirror_topic
        ),
    ),
    Row(
        "mirror promote",
        ("kafka-mirrors", "--promote"),
        ("mirror.stop",),
        "mirror.promote",
        a_mirror_to_stop,
        lambda run, w, t: run(
            "kafka-mirrors",
            *at(w),
            "--promote",
            "--topics",
            t.mirror.mirror_topic,
            "--reason",
            REASON,
        ),
        asked_event="request.promote",
    ),
    Row(
        "mirror failover",
        ("kafka-mirrors", "--failover"),
        ("mirror.stop",),
        "mirror.failover",
        a_mirror_to_stop,
        lambda run, w, t: run(
            "kafka-mirrors",
            *at(w),
            "--failover",
            "--topics",
            t.mirror.mirror_topic,
            "--reason",
            REASON,
        ),
        asked_event="request.failover",
    ),
    *[
        Row(
            f"mirror {action}",
            ("kafka-mirrors", option),
            ("mirror.stop",),
            f"mirror.{action}",
            a_mirror_to_reverse,
            lambda run, w, t, option=option: run(
                "kafka-mirrors",
                *at(w),
                option,
                "--topics",
                t.mirror.mirror_topic,
                "--reason",
                REASON,
            ),
            asked_event=f"request.{action}",
        )
        for action, option in (
            ("reverse-and-start-mirror", "--reverse-and-start"),
            ("reverse-and-pause-mirror", "--reverse-and-pause"),
        )
    ],
    Row(
        "mirror truncate-and-restore",
        ("kafka-mirrors", "--truncate-and-restore"),
        ("mirror.stop",),
        "mirror.truncate-and-restore",
        a_topic_to_restore,
        lambda run, w, t: run(
            "kafka-mirrors",
            "--bootstrap-server",
            kafka.SOURCE.bootstrap,
            "--truncate-and-restore",
            "--link",
            t.link.name,
            "--topics",
            t.mirror.source_topic,
            "--reason",
            REASON,
        ),
        asked_event="request.truncate-and-restore",
    ),
    Row(
        "mirror failover, breaking glass",
        ("kafka-mirrors", "--failover"),
        ("mirror.stop", "request.override"),
        "mirror.failover",
        a_mirror_to_break_glass_on,
        lambda run, w, t: run(
            "kafka-mirrors",
            *at(w),
            "--failover",
            "--break-glass",
            "--topics",
            t.mirror.mirror_topic,
            "--reason",
            REASON,
        ),
        inner=BREAK_GLASS,
    ),
    Row(
        "request approve",
        ("kafka-mirrors", "--approve"),
        ("request.approve",),
        "request.approve",
        someone_elses_request,
        lambda run, w, t: run("kafka-mirrors", *at(w), "--approve", str(t.request.pk)),
    ),
    Row(
        "request reject",
        ("kafka-mirrors", "--reject"),
        ("request.approve",),
        "request.reject",
        someone_elses_request,
        lambda run, w, t: run(
            "kafka-mirrors", *at(w), "--reject", str(t.request.pk), "--reason", REASON
        ),
    ),
    Row(
        "request withdraw",
        ("kafka-mirrors", "--withdraw"),
        ("mirror.stop",),
        "request.withdraw",
        an_own_request,
        lambda run, w, t: run("kafka-mirrors", *at(w), "--withdraw", str(t.request.pk)),
    ),
]


# Checking one case. ---------------------------------------------------------------------------


def fingerprint() -> tuple:
    """What the actions can change, in one comparable value."""
    return (
        sorted(
            KafkaCluster.objects.values_list(
                "name", "bootstrap_servers", "schema_registry_url", "schema_registry_username"
            )
        ),
        sorted(
            (name, state, json.dumps(configs, sort_keys=True), required, override, synced, rpo)
            for name, state, configs, required, override, synced, rpo in (
                ClusterLink.objects.values_list(
                    "name",
                    "state",
                    "configs",
                    "approvals_required",
                    "admin_may_override",
                    "schemas_synced_at",
                    "rpo_target_seconds",
                )
            )
        ),
        sorted(
            (topic, state, paused, json.dumps(report, sort_keys=True))
            for topic, state, paused, report in MirrorTopic.objects.values_list(
                "mirror_topic", "state", "paused", "stop_report"
            )
        ),
        sorted(ApprovalRequest.objects.values_list("pk", "state")),
        sorted(Approval.objects.values_list("request_id", "approver_id")),
        sorted(ApiToken.objects.values_list("user_id", "name")),
        sorted(
            get_user_model().objects.values_list(
                "username", "is_active", "is_superuser", "password"
            )
        ),
        sorted(get_user_model().groups.through.objects.values_list("user_id", "group__name")),
        sorted(ScenarioRun.objects.values_list("pk", "status")),
        sorted(Verification.objects.values_list("pk", "state")),
        sorted(MergeFlow.objects.values_list("name", "state")),
        sorted(SchemaSubjectSync.objects.values_list("subject", "state")),
        sorted(DrillRun.objects.values_list("pk", "outcome")),
        sorted(DrillSchedule.objects.values_list("link_id", "every_hours", "enabled")),
        sorted(Gateway.objects.values_list("name", "host", "port", "route__name", "switches")),
        sorted(Gateway.clusters.through.objects.values_list("gateway__name", "kafkacluster_id")),
    )


def _last(model) -> int:
    return model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def people_events(since: int) -> list[AuditEvent]:
    """Events left by people (not by the tests' set-up or the system's own parts)."""
    events = AuditEvent.objects.filter(pk__gt=since).order_by("pk")
    return [e for e in events if e.actor_id is not None or e.actor_name.split(" ")[0] in ROLES]


def check(interface: Interface, row: Row, role: str, w: World, caller) -> None:
    """Do `row` as `role` and check that the policy decided the outcome, and the audit trail
    holds exactly one event of it."""
    user = w.users[role]
    allowed = all(can(user, action) for action in row.policy)
    target = row.target(w, user, allowed)
    try:
        _check(interface, row, user, allowed, w, caller, target)
    finally:
        if row.undo is not None:
            row.undo(w, target)


def _check(interface: Interface, row: Row, user, allowed: bool, w: World, caller, target) -> None:
    asks = allowed and row.asked_event is not None and not acts_at_once(user, target.link)
    expected = "asked" if asks else "done" if allowed else "refused"
    before, since, requests_since = fingerprint(), _last(AuditEvent), _last(ApprovalRequest)

    answer = row.perform(caller, w, target)

    role = user.get_username()
    assert answer.kind == expected, f"{role} {row.name}: expected {expected}, got {answer}"
    events = people_events(since)
    assert len(events) == 1, [(e.actor_name, e.action, e.result, e.message) for e in events]
    [event] = events
    assert event.actor_id == user.pk and event.actor_name.startswith(user.get_username()), event
    new_requests = list(
        ApprovalRequest.objects.filter(pk__gt=requests_since).values_list("requester", "state")
    )
    if expected == "refused":
        lacking = next(action for action in row.policy if not can(user, action))
        if lacking == row.policy[0]:  # the route's own action
            audited, message = lacking, f"Your role does not allow {lacking}"
            status = interface.gate_status
        else:
            (audited, message), status = row.inner[lacking], interface.inner_status
        assert message in answer.message, answer
        if status is not None:
            assert answer.status == status, answer
        assert (event.action, event.result) == (audited, "refused"), event
        assert message in event.message, event.message
        assert fingerprint() == before, "a refused action changed something"
        assert new_requests == []
    else:
        audited = row.asked_event if asks else row.event
        assert (event.action, event.result) == (audited, "ok"), (event, event.message)
        assert fingerprint() != before, "an allowed action changed nothing"
        assert new_requests == ([(user.pk, "PENDING")] if asks else [])


def run_table(interface: Interface, table: list[Row], role: str, w: World, caller, subtests):
    for row in table:
        with subtests.test(row.name, role=role):
            check(interface, row, role, w, caller)


@pytest.fixture(autouse=True)
def proxies_not_started(monkeypatch):
    """The matrix checks who may define, change, switch and delete a gateway, not its proxy:
    tests/integration/test_gateways.py starts, switches and stops real ones."""
    monkeypatch.setattr(gateways, "start", lambda gateway: None)
    monkeypatch.setattr(gateways, "stop", lambda gateway: None)


@pytest.fixture
def world(users, make_link, make_topic, topic_name, registered_clusters) -> World:
    return World(users, make_link, make_topic, topic_name, registered_clusters)


# The matrix. ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_the_console_allows_and_refuses_exactly_what_the_policy_says_and_audits_each_once(
    role, world, client_as, subtests
):
    run_table(CONSOLE_UI, CONSOLE, role, world, client_as(role), subtests)


@pytest.mark.parametrize("role", ROLES)
def test_the_api_allows_and_refuses_exactly_what_the_policy_says_and_audits_each_once(
    role, world, users, subtests
):
    _, secret = create_token(SETUP, users[role], "matrix")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    run_table(API_UI, API, role, world, client, subtests)


@pytest.mark.parametrize("role", ROLES)
def test_the_tools_allow_and_refuse_exactly_what_the_policy_says_and_audit_each_once(
    role, world, users, live_server, monkeypatch, subtests
):
    """The tools run in this process (their Kafka client answered by the in-memory clusters),
    against the console over HTTP; as processes of their own they are tests/integration's
    test_cli_* and test_tutorial's."""
    _, secret = create_token(SETUP, users[role], "matrix")
    monkeypatch.setenv("ISTHMUS_URL", live_server.url)
    monkeypatch.setenv("ISTHMUS_TOKEN", secret)
    monkeypatch.setenv("ISTHMUS_CONFIG", "/nonexistent")

    def run(*argv: str) -> Answer:
        ran = cli_in_process.run(list(argv), monkeypatch)
        return cli_answer(ran.returncode, ran.stdout, ran.stderr)

    run_table(CLI_UI, CLI, role, world, run, subtests)


# Completeness: the tables against the policy, the URL confs and the tools. --------------------


def console_routes() -> list[tuple[str, str, Any]]:
    """(route, URL name, view) for each route of console/urls.py, the API's aside."""
    return [
        (str(entry.pattern), entry.name, entry.callback)
        for entry in get_resolver().url_patterns
        if isinstance(entry, URLPattern)
    ]


def changes(view) -> bool:
    """Whether a view may change something: an API-style view with a method other than GET,
    or a page guarded by an action other than reading."""
    per_method = getattr(view, "access_actions", None)
    if per_method is not None:
        return any(method != "GET" for method in per_method)
    return view.access_action not in READ_ONLY


def cli_options(module) -> set[str]:
    """The options that choose what a tool does: its parser's mutually exclusive group, read
    from argparse's (private but long-stable) attributes, as the tools give no parser alone."""

    class Parsed(Exception):
        pass

    def catch(parser, *args, **kwargs):
        raise Parsed(parser)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", catch):
        try:
            module._arguments([])
        except Parsed as parsed:
            parser = parsed.args[0]
    return {
        option
        for group in parser._mutually_exclusive_groups
        for action in group._group_actions
        for option in action.option_strings
    }


def covered(table: list[Row]) -> set[str]:
    return {action for row in table for action in row.policy}


MATRIX_ACTIONS = set(POLICY) - READ_ONLY


def test_every_action_of_the_policy_is_in_the_console_and_api_tables():
    assert MATRIX_ACTIONS - covered(CONSOLE) == set()
    assert MATRIX_ACTIONS - covered(API) - set(API_ABSENT) == set()
    # what the tools do is what the API does, whatever route they take
    assert covered(CLI) == covered(API)
    for table in (CONSOLE, API, CLI):
        assert covered(table) <= set(POLICY)
        assert not covered(table) & READ_ONLY


def test_actions_said_to_be_absent_from_the_api_have_no_api_route():
    assert set(API_ABSENT) <= set(POLICY)
    assert not set(API_ABSENT) & set(api_routes().values()), "give them API rows"
    assert not set(API_ABSENT) & covered(API)


def test_every_console_route_that_changes_something_is_in_the_table_with_its_action():
    routes = {name: (route, view) for route, name, view in console_routes()}
    changing = {
        name
        for name, (route, view) in routes.items()
        if not route.startswith("kafka/v3/") and changes(view) and route not in CONSOLE_EXCLUDED
    }
    assert changing == {row.route for row in CONSOLE}
    for row in CONSOLE:  # the table checks the action the route is really guarded by
        assert routes[row.route][1].access_action == row.policy[0], row.name
    assert set(CONSOLE_EXCLUDED) <= {route for route, _, _ in console_routes()}


def test_every_api_route_that_changes_something_is_in_the_table_with_its_action():
    routes = api_routes()
    assert {key for key in routes if key[1] != "GET"} == {row.route for row in API}
    for row in API:
        assert routes[row.route] == row.policy[0], row.name


def test_every_tool_option_that_changes_something_is_in_the_table():
    options = {
        (tool, option)
        for tool, module in CLI_TOOLS.items()
        if hasattr(module, "_arguments")
        for option in cli_options(module) - CLI_READ_FLAGS
    }
    assert options == {row.route for row in CLI}


def test_a_post_to_a_page_that_only_reads_changes_nothing(world, client_as):
    """The routes the table leaves out as reading only (and those excluded as reading, such
    as health) ignore a POST's data."""
    client = client_as("admin")
    mirror = world.mirror_in(world.link, PROMOTABLE)
    request = world.request(world.users["operator"])
    values = {
        "destination": world.destination.name,
        "topic": mirror.mirror_topic,
        "pk": request.pk,
        "username": "viewer",
        "flow": world.flow_in(MergeFlow.State.ACTIVE).name,
    }
    before, since = fingerprint(), _last(AuditEvent)
    posted = []
    for route, name, view in console_routes():
        if route.startswith("kafka/v3/") or changes(view) and route not in CONSOLE_READING:
            continue
        # a cluster's name on the clusters' pages, a link's on the links'
        named = world.destination.name if route.startswith("clusters/") else world.link.name
        kwargs = {
            key: {**values, "name": named}[key] for key in re.findall(r"<(?:\w+:)?(\w+)>", route)
        }
        response = client.post(
            reverse(name, kwargs=kwargs), {"name": "x", "reason": "x", "role": "admin"}
        )
        assert response.status_code < 500, (route, response.status_code)
        posted.append(route)
    assert {"audit/", "clusters/", *CONSOLE_READING} <= set(posted)
    assert people_events(since) == []
    assert fingerprint() == before
