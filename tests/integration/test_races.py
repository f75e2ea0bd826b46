"""Requests racing for one object, through the real web server: the database decides, exactly
one wins, the others are refused clearly, and the audit trail says so once."""

from __future__ import annotations

import faulthandler
import http.client
import json
import re
import sys
import threading
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse

from devstack import kafka
from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import TopicNotFound
from infra.processes import wait_for
from replication.core import read_only
from replication.cutover import link_deletion
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.topics import mirrors
from replication.topics.mirrors import create_mirror
from tests.conftest import admin_config
from tests.kafka_clients import acls_on

pytestmark = pytest.mark.integration


def _call(url: str, token: str, method: str) -> tuple[int, dict]:
    request = urllib.request.Request(  # noqa: S310 - the test server's own URL
        url, method=method, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - test server
            body = response.read()
            return response.status, json.loads(body) if body else {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except TimeoutError:
        # The live server runs in this process: say where each of its threads is stuck (one
        # CI run saw a request here go unanswered for 120 s, once in many).
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        raise


def test_concurrent_forced_deletes_of_one_link_delete_it_once(
    live_server, users, make_link, make_topic, topic_name
):
    link = make_link({"cluster.link.paused": "true"})
    for i in range(2):
        create_mirror(
            audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, f"{topic_name}-{i}")
        )
    _, token = create_token(audit.Actor.system("tests"), users["admin"], f"t-{uuid.uuid4().hex}")
    url = (
        f"{live_server.url}/kafka/v3/clusters/{link.destination.cluster_id}/links/{link.name}"
        "?force=true&reason=retire"
    )
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: _call(url, token, "DELETE"), range(4)))

    statuses = sorted(status for status, _ in answers)
    assert statuses.count(204) == 1, answers
    assert all(status in (404, 409) for status in statuses[1:]), answers
    for status, body in answers:
        if status != 204:
            assert body["message"] and "Traceback" not in body["message"], body
    assert not ClusterLink.objects.filter(pk=link.pk).exists()
    deleted = AuditEvent.objects.filter(action="link.delete", target=f"link {link.name}")
    assert [e.result for e in deleted].count("ok") == 1
    assert not MirrorTopic.objects.filter(link_id=link.pk).exists()


def test_a_mirror_made_while_its_link_is_being_deleted_is_not_deleted_with_it(
    make_link, make_topic, topic_name
):
    from unittest import mock

    from replication.core.errors import ReplicationError
    from replication.cutover import promote

    actor = audit.Actor.system("tests")
    link = make_link({"cluster.link.paused": "true"})
    create_mirror(actor, link, make_topic(kafka.SOURCE, f"{topic_name}-old"))
    late_topic = make_topic(kafka.SOURCE, f"{topic_name}-late")
    fail_over = promote.stop_mirrors

    def fail_over_then_someone_adds_a_mirror(*args, **kwargs):
        outcomes = fail_over(*args, **kwargs)
        create_mirror(actor, link, late_topic)
        return outcomes

    with (
        mock.patch.object(promote, "stop_mirrors", fail_over_then_someone_adds_a_mirror),
        pytest.raises(ReplicationError, match="was added to link .* meanwhile"),
    ):
        link_deletion.delete_link(actor, link, force=True)
    assert ClusterLink.objects.filter(pk=link.pk).exists()
    assert MirrorTopic.objects.get(mirror_topic=late_topic).state == MirrorTopic.State.LINK_PAUSED


def _set_cookies(headers: http.client.HTTPMessage) -> SimpleCookie:
    cookies = SimpleCookie()
    for header in headers.get_all("Set-Cookie") or []:
        cookies.load(header)
    return cookies


class ConsoleTab:
    """A browser tab of a logged-in user on the live server: its session, and the CSRF token of
    the form it shows."""

    def __init__(self, live_server, user, page: str):
        self.address = urlsplit(live_server.url).netloc
        client = Client()
        client.force_login(user)
        self.cookies = {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME]}
        status, headers, body = self._send("GET", page)
        assert status == 200, body[:500]
        self.cookies.update(_set_cookies(headers))
        self.token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', body)[1]

    def _send(self, method: str, path: str, form: dict | None = None):
        connection = http.client.HTTPConnection(self.address, timeout=120)
        try:
            headers = {"Cookie": "; ".join(f"{k}={m.value}" for k, m in self.cookies.items())}
            body = None
            if form is not None:
                body = urlencode(form)
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.msg, response.read().decode(errors="replace")
        finally:
            connection.close()

    def submit(self, path: str, fields: dict | None = None) -> tuple[int, str, list[str]]:
        """Post the form; its status, where it sends the browser, and the messages it flashes."""
        form = {"csrfmiddlewaretoken": self.token, **(fields or {})}
        status, headers, body = self._send("POST", path, form)
        cookies = _set_cookies(headers)
        request = HttpRequest()
        if "messages" in cookies:
            request.COOKIES["messages"] = cookies["messages"].value
        flashed = [str(m) for m in CookieStorage(request)]
        return status, headers.get("Location", "") or body[:500], flashed


@pytest.mark.django_db(transaction=True)
def test_concurrent_deletes_of_one_mirror_in_the_console_delete_it_once(
    live_server, users, make_link, make_topic, topic_name, monkeypatch
):
    racers = 4
    link = make_link({"cluster.link.paused": "true"})
    mirror = create_mirror(audit.Actor.system("tests"), link, make_topic(kafka.SOURCE, topic_name))
    page = reverse("mirror-delete", args=[mirror.destination.name, mirror.mirror_topic])
    tabs = [ConsoleTab(live_server, users["admin"], page) for _ in range(racers)]

    # Every request has read the mirror (the page looks it up) before any deletes it.
    at_the_line = threading.Barrier(racers, timeout=60)
    connect = mirrors.destination_admin

    def all_at_once(on_link: ClusterLink) -> KafkaAdmin:
        at_the_line.wait()
        return connect(on_link)

    deleted: list[str] = []
    lifted: list[str] = []
    delete_topic, lift = KafkaAdmin.delete_topic, read_only.lift

    def counted_delete(admin: KafkaAdmin, name: str) -> None:
        deleted.append(name)
        delete_topic(admin, name)

    def counted_lift(admin: KafkaAdmin, name: str, keep=()) -> None:
        lifted.append(name)
        lift(admin, name, keep)

    monkeypatch.setattr(mirrors, "destination_admin", all_at_once)
    monkeypatch.setattr(KafkaAdmin, "delete_topic", counted_delete)
    monkeypatch.setattr(read_only, "lift", counted_lift)
    with ThreadPoolExecutor(max_workers=racers) as pool:
        confirmed = {"confirm_name": mirror.mirror_topic}
        answers = list(pool.map(lambda tab: tab.submit(page, confirmed), tabs))

    name = mirror.mirror_topic
    assert all(status == 302 for status, _, _ in answers), answers  # no 500
    done = [a for a in answers if a[2] == [f"Deleted mirror topic {name}."]]
    refused = [a for a in answers if a not in done]
    assert len(done) == 1, answers
    assert done[0][1] == reverse("link-detail", args=[link.destination.name, link.name])
    for _, location, flashed in refused:
        assert location == page.removesuffix("delete/"), answers  # back to the mirror's page
        assert flashed == [f"Mirror topic {name!r} was deleted meanwhile."], answers
    events = AuditEvent.objects.filter(action="mirror.delete", target=f"mirror {name}")
    assert sorted(e.result for e in events) == ["ok"] + ["refused"] * (racers - 1)
    assert not MirrorTopic.objects.filter(pk=mirror.pk).exists()
    # The cluster was touched once, by the one that deleted it.
    assert (deleted, lifted) == ([name], [name])
    destination = KafkaAdmin(admin_config(kafka.DESTINATION), timeout=10)

    def gone() -> bool:
        try:
            destination.describe_topic(name)
        except TopicNotFound:
            return True
        return False

    assert wait_for(gone, 30)
    assert acls_on(kafka.DESTINATION, name) == set()
