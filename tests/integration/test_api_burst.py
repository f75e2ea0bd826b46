"""A burst of 2,000 API requests from 20 concurrent clients against the console under its web
server, run as the devstack runs it: reads and writes mixed, many clients racing to create the same
link and the same mirror and to delete the same link, config alters, refused calls. Nothing
answers 5xx or "database is locked", every answer is the v3 envelope, and every write is
applied exactly once or refused clearly, as the database, the audit trail and Kafka show. And
slow clients (a slowloris) hold no thread of it: everyone else is still answered."""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import random
import socket
import subprocess
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from devstack import kafka
from devstack.stack import Stack
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.processes import wait_for
from replication.core import read_only
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import ApprovalRequest, AuditEvent, ClusterLink, MirrorTopic
from tests import leftovers
from tests.conftest import TEST_REDIS_URL, _database_url_for_worker, admin_config, stop_process
from tests.kafka_clients import READ_ONLY_ACLS, acls_on

# The web server reads only committed rows, from the test database's file (or PostgreSQL database).
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CLIENTS = 20
REQUESTS = 2_000
ROUNDS = 5  # each round's link is deleted by a race at its end, but the last one's
STEPS = REQUESTS // CLIENTS // ROUNDS  # per client and round
FINAL = 3  # steps of each round's last race
ROLES = ("viewer", "operator", "approver", "admin")  # client i acts as ROLES[i % 4]
WRITERS = ("operator", "admin")
# Each writer owns one (link, config) and is its only writer, so its last accepted value must
# be the value that stays: a lost update by a concurrent alter of another key shows.
OWNED_KEYS = (
    "metadata.max.age.ms",
    "topic.config.sync.ms",
    "availability.check.ms",
    "availability.check.consecutive.failure.threshold",
    "cluster.link.retry.timeout.ms",
)


# The console under its web server. ---------------------------------------------------------


@dataclass(frozen=True)
class Console:
    port: int
    log: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own server
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def web_console(tmp_path: Path, transactional_db) -> Iterator[Console]:
    """The web server with the devstack's own command line, on a free port, against
    the test database and the tests' Redis database."""
    port = _free_port()
    [web] = [
        part for part in Stack(settings.VAR_DIR, web_port=port).components if part.name == "web"
    ]
    log = tmp_path / "web.log"
    env = {**os.environ, "REDIS_URL": TEST_REDIS_URL, "DATABASE_URL": _database_url_for_worker()}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            web.command(), cwd=settings.BASE_DIR, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        answered = wait_for(
            lambda: proc.poll() is not None or _answers(f"http://127.0.0.1:{port}/login/"), 60, 0.2
        )
        assert answered and proc.poll() is None, (
            f"The web server did not answer:\n{log.read_text()}"
        )
        yield Console(port, log)
    finally:
        stop_process(proc)


# The clients. --------------------------------------------------------------------------------


@dataclass
class Answer:
    client: int
    role: str
    kind: str  # what the client meant to do, e.g. "race.create_link"
    round: int
    method: str
    path: str
    status: int  # 0: no HTTP answer at all (see error)
    body: bytes = b""
    content_type: str = ""
    error: str = ""
    note: dict[str, Any] = field(default_factory=dict)  # e.g. the config value sent

    def json(self) -> Any:
        return json.loads(self.body)

    def __str__(self) -> str:
        text = self.error or self.body[:300].decode(errors="replace")
        who = f"client {self.client} ({self.role}) {self.kind}"
        return f"{who}: {self.method} {self.path} -> {self.status} {text}"


@dataclass
class Plan:
    """What the clients share: names, the races' starting line, every answer."""

    port: int
    prefix: str  # of every link and topic the burst makes
    links: str  # the links URL of the destination cluster
    cluster_id: str
    base: str  # a link that lives through the burst, where the mirrors are made
    race_links: list[str]  # one per round, made (and but for the last, deleted) by a race
    topics: list[str]  # source topics, one mirrored per round by a race
    spare_topic: str  # a source topic no mirror may ever be made of
    tokens: dict[str, str]
    barrier: threading.Barrier = field(default_factory=lambda: threading.Barrier(CLIENTS))
    answers: list[Answer] = field(default_factory=list)


class Client:
    """One API user on its own HTTP connection (kept alive between calls, as a session)."""

    def __init__(self, index: int, plan: Plan):
        self.index, self.plan = index, plan
        self.role = ROLES[index % len(ROLES)]
        self.rng = random.Random(index)
        self.writer = self.role in WRITERS
        number = index // 2  # writers are the odd clients: 0..9
        self.key = OWNED_KEYS[number % len(OWNED_KEYS)]
        self.key_on_base = number < len(OWNED_KEYS)
        self.sequence = 0
        self.round = 0
        self.connection: http.client.HTTPConnection | None = None

    def call(self, kind: str, method: str, path: str, body: Any = None, **note: Any) -> Answer:
        headers = {"Authorization": f"Bearer {self.plan.tokens[self.role]}"}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body), "application/json"
        answer = Answer(self.index, self.role, kind, self.round, method, path, 0, note=note)
        try:
            if self.connection is None:
                self.connection = http.client.HTTPConnection(
                    "127.0.0.1", self.plan.port, timeout=90
                )
            self.connection.request(method, path, body=data, headers=headers)
            response = self.connection.getresponse()
            answer.status, answer.body = response.status, response.read()
            answer.content_type = response.getheader("Content-Type", "")
        except (OSError, http.client.HTTPException) as exc:
            answer.error = f"{type(exc).__name__}: {exc}"
            self.hang_up()
        self.plan.answers.append(answer)  # list.append is atomic
        return answer

    def hang_up(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def at_the_line(self) -> None:
        """Wait for every client, so the next call races theirs. The idle connection is closed
        first: a server may drop keep-alive connections left idle."""
        self.hang_up()
        self.plan.barrier.wait(timeout=120)

    def run(self) -> None:
        for k in range(ROUNDS):
            self.round = k
            self.at_the_line()
            self.race_create_link(k)
            self.at_the_line()
            self.race_create_mirror(k)
            self.at_the_line()  # the winners have made the link and the mirror by now
            for _ in range(STEPS - 2 - FINAL):
                self.mixed(k)
            self.at_the_line()
            self.final_race(k)
        self.hang_up()

    def final_race(self, k: int) -> None:
        """The round's link deleted while it is altered, read and asked to be deleted; in the
        last round, every writer altering its config at once instead."""
        plan = self.plan
        if self.writer and (k == ROUNDS - 1 or not self.key_on_base):
            for _ in range(FINAL):  # alters one after the other, across the deletion
                self.alter_own_config(k)
            return
        if k == ROUNDS - 1:
            for _ in range(FINAL):
                self.call("read", "GET", plan.links)
            return
        self.race_delete_link(k)
        for _ in range(FINAL - 1):
            self.call("race.read_deleted", "GET", f"{plan.links}/{plan.race_links[k]}")

    # The races. -------------------------------------------------------------------------------

    def race_create_link(self, k: int) -> None:
        configs = [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]
        url = f"{self.plan.links}?link_name={self.plan.race_links[k]}"
        self.call("race.create_link", "POST", url, {"configs": configs})

    def race_create_mirror(self, k: int) -> None:
        url = f"{self.plan.links}/{self.plan.base}/mirrors"
        self.call("race.create_mirror", "POST", url, {"source_topic_name": self.plan.topics[k]})

    def race_delete_link(self, k: int) -> None:
        url = f"{self.plan.links}/{self.plan.race_links[k]}"
        # An admin deletes at once; an operator asks for the deletion (an approval request).
        query = "?force=true" if self.role == "admin" else "?reason=burst"
        self.call("race.delete_link", "DELETE", url + query)

    # Everything else, at random. -------------------------------------------------------------

    def mixed(self, k: int) -> None:
        plan, rng = self.plan, self.rng
        link = rng.choice([plan.base, plan.race_links[k]])
        choices: list[tuple[int, Any]] = [
            (3, lambda: self.call("read", "GET", "/kafka/v3/clusters")),
            (2, lambda: self.call("read", "GET", f"/kafka/v3/clusters/{plan.cluster_id}")),
            (4, lambda: self.call("read", "GET", plan.links)),
            (4, lambda: self.call("read.link", "GET", f"{plan.links}/{link}")),
            (3, lambda: self.call("read.link", "GET", f"{plan.links}/{link}/configs")),
            (
                2,
                lambda: self.call(
                    "read.link", "GET", f"{plan.links}/{link}/configs/metadata.max.age.ms"
                ),
            ),
            (2, lambda: self.call("read", "GET", f"{plan.links}/{plan.base}/mirrors")),
            (1, lambda: self.call("read", "GET", f"{plan.links}/-/mirrors?mirror_status=PAUSED")),
            (
                2,
                lambda: self.call(
                    "read.mirror", "GET", f"{plan.links}/{plan.base}/mirrors/{plan.topics[k]}"
                ),
            ),
            (1, lambda: self.call("refused.no_link", "GET", f"{plan.links}/no-such-link")),
        ]
        if self.writer:
            choices += [
                (12, lambda: self.alter_own_config(k)),
                (4, lambda: self.pause_or_resume(k)),
                (1, lambda: self.refused_bad_names()),
                (1, lambda: self.refused_bad_configs(k)),
                (1, lambda: self.refused_mirrors(k)),
            ]
        else:
            choices += [
                (
                    3,
                    lambda: self.call(
                        "refused.role",
                        "PUT",
                        f"{plan.links}/{link}/configs:alter",
                        {"data": [{"name": "metadata.max.age.ms", "value": "1000"}]},
                    ),
                ),
                (
                    1,
                    lambda: self.call(
                        "refused.role",
                        "POST",
                        f"{plan.links}/{plan.base}/mirrors",
                        {"source_topic_name": plan.spare_topic},
                    ),
                ),
            ]
        weights, actions = zip(*choices, strict=True)
        rng.choices(actions, weights)[0]()

    def alter_own_config(self, k: int) -> None:
        link = self.plan.base if self.key_on_base else self.plan.race_links[k]
        self.sequence += 1
        value = str(1000 * (self.index + 1) + self.sequence)  # each value is sent once
        configs = f"{self.plan.links}/{link}/configs"
        note = {"link": link, "key": self.key, "value": value}
        if self.rng.random() < 0.5:
            body = {"data": [{"name": self.key, "value": value, "operation": "SET"}]}
            self.call("alter", "PUT", f"{configs}:alter", body, **note)
        else:
            self.call("alter", "PUT", f"{configs}/{self.key}", {"value": value}, **note)

    def pause_or_resume(self, k: int) -> None:
        verb = self.rng.choice(["pause", "resume"])
        url = f"{self.plan.links}/{self.plan.base}/mirrors:{verb}"
        body = {"mirror_topic_names": [self.plan.topics[k]]}
        self.call("pause_resume", "POST", url, body, verb=verb, topic=self.plan.topics[k])

    def refused_bad_names(self) -> None:
        configs = {"configs": [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]}
        name = self.rng.choice(["bad%2Fname", "x%0A", "-", "a%20b"])
        self.call("refused.bad_name", "POST", f"{self.plan.links}?link_name={name}", configs)

    def refused_bad_configs(self, k: int) -> None:
        entry = self.rng.choice(
            [
                {"name": "no.such.config", "value": "1"},
                {"name": "metadata.max.age.ms", "value": "soon"},
                {"name": "cluster.link.prefix", "value": "p."},
            ]
        )
        url = f"{self.plan.links}/{self.plan.race_links[k]}/configs:alter"
        self.call("refused.bad_config", "PUT", url, {"data": [entry]})

    def refused_mirrors(self, k: int) -> None:
        url = f"{self.plan.links}/{self.plan.base}/mirrors"
        body = self.rng.choice(
            [
                {"source_topic_name": f"{self.plan.spare_topic}-missing"},  # not on the source
                {"source_topic_name": "bad topic!"},
                # one broker: the destination refuses 3 replicas, before anything is made
                {"source_topic_name": self.plan.spare_topic, "replication_factor": 3},
                {
                    "source_topic_name": self.plan.spare_topic,
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                },
            ]
        )
        self.call("refused.mirror", "POST", url, body)


# The test. -----------------------------------------------------------------------------------


def _assert_v3_envelope(answer: Answer) -> None:
    if answer.status == 204:
        assert answer.body == b"", answer
        return
    assert answer.content_type == "application/json", answer
    body = answer.json()
    assert isinstance(body, dict), answer
    if answer.status >= 400:
        assert set(body) == {"error_code", "message"}, answer
        assert body["error_code"] // 100 == answer.status, answer
        assert body["message"] and "Traceback" not in body["message"], answer
    else:
        assert body.get("kind") and "metadata" in body, answer


# For each kind of call, the statuses that are a clear answer to it. (Between the races, the
# round's link and mirror exist: the races made them.)
ALLOWED = {
    "read": {200},
    "read.link": {200},
    "read.mirror": {200},
    "refused.no_link": {404},
    "refused.role": {403},
    "refused.bad_name": {400},
    "refused.bad_config": {400},
    "refused.mirror": {400, 404},  # 404: a source topic that does not exist
    "alter": {204, 404},  # 404: its link was deleted (checked below)
    "pause_resume": {200},
    "race.read_deleted": {200, 404},
}


def test_a_burst_of_mixed_api_calls_from_20_clients_applies_each_write_once_or_refuses_it(
    web_console: Console, users, registered_clusters, make_link, make_topic
):
    # Every name starts with the session's marker, so what a killed run left on the clusters
    # is swept by a later session (tests/leftovers.py).
    prefix = leftovers.unique_name("burst") + "-"
    destination = registered_clusters["destination"]
    base = make_link({"cluster.link.paused": "true"}, name=f"{prefix}base").name
    topics = [make_topic(kafka.SOURCE, f"{prefix}t{k}", partitions=2) for k in range(ROUNDS)]
    plan = Plan(
        port=web_console.port,
        prefix=prefix,
        links=f"/kafka/v3/clusters/{destination.cluster_id}/links",
        cluster_id=destination.cluster_id,
        base=base,
        race_links=[f"{prefix}link{k}" for k in range(ROUNDS)],
        topics=topics,
        spare_topic=make_topic(kafka.SOURCE, f"{prefix}spare"),
        tokens={
            role: create_token(audit.Actor.system("tests"), users[role], f"burst {role}")[1]
            for role in ROLES
        },
    )
    try:
        # A later session would sweep all of them, had this one been killed.
        named = [base, *plan.race_links, *plan.topics, plan.spare_topic]
        later = time.time() + leftovers.STALE_AFTER_S + 60
        assert all(leftovers.stale(name, later) for name in named), named
        clients = [Client(i, plan) for i in range(CLIENTS)]
        threads = [threading.Thread(target=c.run, name=f"client-{c.index}") for c in clients]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        took = time.monotonic() - started
        assert not any(t.is_alive() for t in threads), "a client hung"
        _check_burst(plan, web_console, took)
        _check_state(plan, destination)
    finally:
        _remove_topics(plan.prefix)


def _check_burst(plan: Plan, console: Console, took: float) -> None:
    answers = plan.answers
    assert len(answers) == REQUESTS, f"{len(answers)} calls made in {took:.0f} s"
    print(f"{REQUESTS} calls in {took:.1f} s: {Counter(a.status for a in answers)}")
    log = console.log.read_text(errors="replace")
    assert [str(a) for a in answers if a.status == 0] == [], "calls without an HTTP answer"
    assert [str(a) for a in answers if a.status >= 500] == []
    assert [str(a) for a in answers if b"database is locked" in a.body] == []
    assert "database is locked" not in log
    assert "Traceback" not in log and "WORKER TIMEOUT" not in log, log[-5000:]
    for answer in answers:
        _assert_v3_envelope(answer)
        if answer.kind in ALLOWED:
            assert answer.status in ALLOWED[answer.kind], answer


def _by_round(answers: list[Answer], kind: str) -> dict[int, list[Answer]]:
    found = defaultdict(list)
    for answer in answers:
        if answer.kind == kind:
            found[answer.round].append(answer)
    return found


def _ok_events(action: str, target: str) -> int:
    return AuditEvent.objects.filter(action=action, target=target, result="ok").count()


def _refused_events(action: str, target: str) -> int:
    return AuditEvent.objects.filter(action=action, target=target, result="refused").count()


# Complex on purpose: one check per kind of call in the burst, side by side.
def _check_state(plan: Plan, destination) -> None:  # noqa: C901
    answers = plan.answers
    races = ("race.create_link", "race.create_mirror", "race.delete_link")
    refused_roles = [a for a in answers if a.kind in races and a.role not in WRITERS]
    assert refused_roles and all(a.status == 403 for a in refused_roles), refused_roles[:3]

    # Each racing link create made the link once; the others were told it exists.
    for k, tries in _by_round(answers, "race.create_link").items():
        name = plan.race_links[k]
        writers = [a for a in tries if a.role in WRITERS]
        assert [a.status for a in writers].count(204) == 1, [str(a) for a in writers]
        for lost in (a for a in writers if a.status != 204):
            assert lost.status == 409 and "already exists" in lost.json()["message"], lost
        target = f"link {name} on {destination.name}"
        assert _ok_events("link.create", target) == 1
        assert _refused_events("link.create", target) == len(writers) - 1

    # Each racing mirror create made the mirror once, read-only, with its source's partitions.
    on_destination = KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10)
    mirrors = {m.mirror_topic: m for m in MirrorTopic.objects.filter(link__name=plan.base)}
    for k, tries in _by_round(answers, "race.create_mirror").items():
        topic = plan.topics[k]
        writers = [a for a in tries if a.role in WRITERS]
        assert [a.status for a in writers].count(204) == 1, [str(a) for a in writers]
        for lost in (a for a in writers if a.status != 204):
            assert lost.status == 409 and topic in lost.json()["message"], lost
        target = f"mirror {topic} on link {plan.base}"
        assert _ok_events("mirror.create", target) == 1
        assert _refused_events("mirror.create", target) == len(writers) - 1
        assert mirrors[topic].num_partitions == on_destination.describe_topic(topic).partitions == 2
        assert acls_on(kafka.DESTINATION, topic) == READ_ONLY_ACLS
    assert sorted(mirrors) == plan.topics

    # Each racing delete deleted its link once; operators asked for it, one request each.
    for k, tries in _by_round(answers, "race.delete_link").items():
        name = plan.race_links[k]
        admins = [a for a in tries if a.role == "admin"]
        assert [a.status for a in admins].count(204) == 1, [str(a) for a in admins]
        assert all(a.status in (204, 404, 409) for a in admins), [str(a) for a in admins]
        operators = [a for a in tries if a.role == "operator"]
        assert all(a.status in (202, 404, 409) for a in operators), [str(a) for a in operators]
        asked = [a for a in operators if a.status == 202]
        assert ApprovalRequest.objects.filter(link_name=name).count() == len(asked)
        assert _ok_events("request.delete-link", f"link {name}") == len(asked)
        assert _ok_events("link.delete", f"link {name}") == 1
    deleted = set(plan.race_links[:-1])
    assert set(ClusterLink.objects.values_list("name", flat=True)) == (
        {plan.base, *plan.race_links} - deleted
    )

    # Config alters: each accepted once (one audit event each), each applied on top of the one
    # before it (none made from a stale read, overwriting a change it did not see), none lost.
    alters = [a for a in answers if a.kind == "alter"]
    assert sum(a.status == 204 for a in alters) > 100, Counter(a.status for a in alters)
    for name in {plan.base, *plan.race_links}:
        accepted = [a for a in alters if a.note["link"] == name and a.status == 204]
        events = list(
            AuditEvent.objects.filter(
                action="link.alter_configs", target=f"link {name}", result="ok"
            ).order_by("pk")
        )
        assert len(events) == len(accepted), name
        for previous, event in itertools.pairwise(events):
            assert event.before["configs"] == previous.after["configs"], (
                f"{name}: alter {event.pk} undid a change of alter {previous.pk}"
            )
    last: dict[tuple[str, str], str] = {}
    for answer in alters:  # one writer per (link, key), whose answers were noted in order
        if answer.status == 204:
            last[answer.note["link"], answer.note["key"]] = answer.note["value"]
    for link in ClusterLink.objects.exclude(name__in=deleted):
        for (name, key), value in last.items():
            if name == link.name:
                assert link.configs.get(key) == value, f"{name} {key}: an alter was lost"
    for lost in (a for a in alters if a.status == 404):
        assert lost.note["link"] in deleted, lost  # refused only because its link went

    # Pauses and resumes: each accepted one audited once, the state where they left it.
    outcomes: dict[str, Counter] = defaultdict(Counter)
    for answer in (a for a in answers if a.kind == "pause_resume" and a.status == 200):
        [result] = answer.json()["data"]
        if result["error_code"] is None:
            outcomes[answer.note["topic"]][answer.note["verb"]] += 1
        else:
            assert result["error_code"] in (404, 409) and result["error_message"], answer
    for topic, done in outcomes.items():
        assert _ok_events("mirror.pause", f"mirror {topic}") == done["pause"]
        assert _ok_events("mirror.resume", f"mirror {topic}") == done["resume"]
        assert done["pause"] - done["resume"] in (0, 1), (topic, done)
        assert mirrors[topic].paused is (done["pause"] > done["resume"]), (topic, done)

    # Nothing half-made on Kafka: the mirrors are the only topics of the burst on the destination;
    # the refused mirror creates left neither a topic nor an ACL.
    made = set(on_destination.list_topic_names())
    assert {t for t in made if t.startswith(plan.prefix)} == set(plan.topics)
    assert acls_on(kafka.DESTINATION, plan.spare_topic) == set()


def _remove_topics(prefix: str) -> None:
    """Every topic of the burst on both clusters, waiting for each deletion (the source topics
    too, though make_topic deletes them: it does not wait), and the mirrors' read-only ACLs."""
    for node in (kafka.SOURCE, kafka.DESTINATION):
        admin = KafkaAdmin(admin_config(node), timeout=10)
        for topic in admin.list_topic_names():
            if topic.startswith(prefix):
                with contextlib.suppress(KafkaAdminError):
                    admin.delete_topic(topic)
                if node is kafka.DESTINATION:
                    read_only.lift(admin, topic)


def test_clients_that_send_their_headers_slowly_do_not_stall_the_console(web_console: Console):
    """Forty sockets that each send a header line every second, never finishing their request,
    are more than the server's threads: the console still answers another client (a sync
    worker's threads each waited on one of them, and /login/ timed out)."""
    slow = []
    try:
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", web_console.port), timeout=5)
            sock.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(sock)
        for _ in range(3):
            time.sleep(1)
            for sock in slow:
                sock.sendall(b"X-Slow: 1\r\n")
            with urllib.request.urlopen(  # noqa: S310 - our own server
                f"http://127.0.0.1:{web_console.port}/login/", timeout=10
            ) as answer:
                assert answer.status == 200
    finally:
        for sock in slow:
            sock.close()
