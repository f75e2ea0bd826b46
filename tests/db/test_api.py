"""The JSON API on Kafka REST v3 paths, on in-memory clusters: tokens, refusals, error envelopes
and what each call leaves (what needs real brokers: tests/integration/test_api.py)."""

from __future__ import annotations

import base64
import json

import pytest
from django.test import Client

from devstack import kafka
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import AuditEvent, ClusterLink, MirrorTopic
from replication.topics.mirrors import create_mirror
from tests import memory_kafka


@pytest.fixture
def links_url(registered_clusters) -> str:
    return f"/kafka/v3/clusters/{registered_clusters['destination'].cluster_id}/links"


def send(client: Client, method: str, url: str, body=None):
    data = body if isinstance(body, str | bytes) else json.dumps(body) if body is not None else ""
    return getattr(client, method)(url, data=data, content_type="application/json")


def assert_error(response, status: int, *fragments: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error_code", "message"}
    assert body["error_code"] // 100 == status
    for fragment in fragments:
        assert fragment in body["message"]


# Authentication and roles ------------------------------------------------------------------


def test_a_request_without_a_token_is_refused(client, registered_clusters, links_url):
    response = client.get(links_url)
    assert_error(response, 401, "Authorization: Bearer", "HTTP Basic")
    assert response["WWW-Authenticate"] == 'Bearer realm="isthmus", Basic realm="isthmus"'
    assert not AuditEvent.objects.filter(action="api.authenticate").exists()  # no credentials


def test_a_wrong_or_revoked_token_is_refused(api, users, links_url):
    assert_error(
        Client(HTTP_AUTHORIZATION="Bearer isthmus_not-a-real-token").get(links_url),
        401,
        "not valid",
    )
    assert_error(Client(HTTP_AUTHORIZATION="Basic abc").get(links_url), 401, "user name:API token")
    token, secret = create_token(audit.Actor.system("tests"), users["admin"], "soon gone")
    caller = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert caller.get(links_url).status_code == 200
    token.delete()
    assert_error(caller.get(links_url), 401, "revoked")


def basic(username: str, password: str) -> Client:
    pair = base64.b64encode(f"{username}:{password}".encode()).decode()
    return Client(HTTP_AUTHORIZATION=f"Basic {pair}")


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "admin"])
def test_basic_with_an_api_token_acts_exactly_as_a_bearer_token(role, users, links_url):
    _, secret = create_token(audit.Actor.system("tests"), users[role], "confluent cli")
    caller = basic(users[role].get_username(), secret)
    assert caller.get(links_url).status_code == 200
    since = AuditEvent.objects.count()
    response = send(caller, "post", f"{links_url}?link_name=by-basic", {"configs": []})
    event = AuditEvent.objects.order_by("-id").first()
    assert AuditEvent.objects.count() == since + 1
    assert event.actor_name == f"{users[role].get_username()} (API token 'confluent cli')"
    if role in ("operator", "admin"):  # allowed: refused by the domain for its missing config
        assert_error(response, 400, "bootstrap.servers")
    else:
        assert_error(response, 403, "link.manage")
    assert event.result == "refused"


@pytest.mark.parametrize(
    "password", ["isthmus_not-a-real-token", "the-account-password", "another users token"]
)
def test_basic_with_anything_but_the_users_own_token_is_refused_and_audited(
    password, users, links_url
):
    user = users["operator"]
    user.set_password("the-account-password")
    user.save()
    if password == "another users token":
        _, password = create_token(audit.Actor.system("tests"), users["admin"], "admin's")
    since = AuditEvent.objects.count()
    response = basic(user.get_username(), password).get(links_url)
    assert_error(response, 401, "never your account password")
    assert response["WWW-Authenticate"] == 'Bearer realm="isthmus", Basic realm="isthmus"'
    [event] = AuditEvent.objects.order_by("-id")[: AuditEvent.objects.count() - since]
    assert event.action == "api.authenticate" and event.result == "refused"
    assert event.actor_name == f"{user.get_username()} (not authenticated)"
    assert event.actor is None


@pytest.mark.parametrize(
    "method, tail",
    [
        ("get", "/some-link/unknown-part"),
        ("post", "/some-link/mirrors:explode"),
        ("get", "/some-link/mirrors/a/b/c"),
        ("delete", "/../../v2/brokers"),
    ],
)
def test_an_unknown_api_path_answers_the_v3_envelope_with_404(api, links_url, method, tail):
    response = api("viewer").generic(method.upper(), links_url + tail)
    assert_error(response, 404, "No API path answers", "/kafka/v3/openapi.json")
    assert_error(Client().get("/kafka/unknown"), 404, "No API path answers")
    # refused by Django itself (over 1000 fields): still the envelope, not an HTML page
    fields = "&".join(f"f{i}=1" for i in range(1100))
    assert_error(api("viewer").get(f"{links_url}/-/mirrors?{fields}"), 400, "malformed")


def test_a_disabled_user_token_stops_working(api, users, links_url):
    caller = api("operator")
    users["operator"].is_active = False
    users["operator"].save()
    assert_error(caller.get(links_url), 401)


def test_a_viewer_token_can_read_but_not_create_pause_or_delete(
    api, make_link, make_topic, topic_name, links_url
):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    mirrors = f"{links_url}/{link.name}/mirrors"
    assert (
        send(api("operator"), "post", mirrors, {"source_topic_name": topic_name}).status_code == 204
    )
    viewer = api("viewer")

    assert viewer.get(links_url).status_code == 200
    assert viewer.get(f"{mirrors}/{topic_name}").status_code == 200
    assert_error(
        send(viewer, "post", f"{links_url}?link_name=by-viewer", {"configs": []}),
        403,
        "link.manage",
    )
    assert_error(send(viewer, "post", mirrors, {"source_topic_name": topic_name}), 403)
    assert_error(
        send(viewer, "post", f"{mirrors}:pause", {"mirror_topic_names": [topic_name]}), 403
    )
    assert_error(viewer.delete(f"{links_url}/{link.name}?force=true"), 403)
    # an operator may only ask for a deletion, with a reason, and it waits for approval
    assert_error(api("operator").delete(f"{links_url}/{link.name}?force=true"), 400, "reason")
    asked = api("operator").delete(f"{links_url}/{link.name}?force=true&reason=retire")
    assert asked.status_code == 202 and asked.json()["approval_request"]["state"] == "PENDING"

    assert MirrorTopic.objects.get(mirror_topic=topic_name).state == MirrorTopic.State.ACTIVE
    assert ClusterLink.objects.filter(name=link.name).exists()
    assert not ClusterLink.objects.filter(name="by-viewer").exists()


def test_a_browser_session_needs_the_csrf_token(users, links_url):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["admin"])
    assert browser.get(links_url).status_code == 200
    response = send(browser, "post", f"{links_url}?link_name=x", {"configs": []})
    assert_error(response, 403, "CSRF verification failed")

    browser.get("/account/")  # any console page gives the browser its CSRF cookie
    configs = [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]
    response = browser.post(
        f"{links_url}?link_name=from-browser&validate_only=true",
        data=json.dumps({"configs": configs}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value,
    )
    assert response.status_code == 204, response.content


# Links ---------------------------------------------------------------------------------------


def test_an_operator_creates_lists_and_reads_a_link(api, users, registered_clusters, links_url):
    operator = api("operator")
    configs = [
        {"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap},
        {"name": "metadata.max.age.ms", "value": "5000"},
    ]
    response = send(operator, "post", f"{links_url}?link_name=api-link", {"configs": configs})
    assert response.status_code == 204, response.content

    source_id = registered_clusters["source"].cluster_id
    listed = operator.get(links_url).json()
    assert listed["kind"] == "KafkaLinkDataList"
    [data] = [d for d in listed["data"] if d["link_name"] == "api-link"]
    link = ClusterLink.objects.get(name="api-link")
    assert data["source_cluster_id"] == source_id
    assert data["link_id"] == str(link.link_id)
    # Kafka's own id form: the same UUID as URL-safe base64 without padding.
    assert base64.urlsafe_b64decode(data["cluster_link_id"] + "==") == link.link_id.bytes
    assert data["link_state"] == "ACTIVE"
    assert data["link_error"] == "NO_ERROR"
    assert data["topic_names"] == []
    assert data["metadata"]["self"].endswith(f"{links_url}/api-link")
    assert operator.get(f"{links_url}/api-link").json() == data

    event = AuditEvent.objects.filter(action="link.create").first()
    assert (event.actor, event.result) == (users["operator"], "ok")


def test_validate_only_creates_nothing(api, links_url):
    configs = [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]
    url = f"{links_url}?link_name=just-checking&validate_only=true"
    assert send(api("operator"), "post", url, {"configs": configs}).status_code == 204
    assert not ClusterLink.objects.filter(name="just-checking").exists()
    assert not AuditEvent.objects.filter(action="link.create").exists()


def test_bad_link_requests_get_the_v3_error_envelope(api, links_url, make_link):
    operator = api("operator")
    good = [{"name": "bootstrap.servers", "value": kafka.SOURCE.bootstrap}]
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x", "{not json"), 400, "not valid JSON"
    )
    assert_error(send(operator, "post", f"{links_url}?link_name=x", "[1]"), 400, "JSON object")
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x", {"configs": {"a": "b"}}),
        400,
        "'configs' must be a list",
    )
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x", {"configs": [{"name": "a"}]}),
        400,
        "needs a string value",
    )
    unknown = [*good, {"name": "no.such.config", "value": "1"}]
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x", {"configs": unknown}),
        400,
        "no.such.config",
        "metadata.max.age.ms",  # the message lists the valid keys
    )
    assert_error(send(operator, "post", links_url, {"configs": good}), 400, "link_name")
    assert_error(send(operator, "post", f"{links_url}?link_name=bad/name", {"configs": good}), 400)
    assert_error(send(operator, "post", f"{links_url}?link_name=-", {"configs": good}), 400, "'-'")
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x&validate_only=maybe", {"configs": good}),
        400,
        "true or false",
    )
    unreachable = [{"name": "bootstrap.servers", "value": "127.0.0.1:1"}]
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x", {"configs": unreachable}),
        400,
        "cannot reach its source",
    )
    taken = make_link()
    assert_error(
        send(operator, "post", f"{links_url}?link_name={taken.name}", {"configs": good}),
        409,
        "already exists",
    )
    assert_error(operator.get(f"{links_url}/missing"), 404, "No cluster link named 'missing'")
    assert_error(operator.get("/kafka/v3/clusters/nope/links"), 404, "No registered cluster")
    assert_error(operator.patch(links_url), 405, "GET or POST")
    assert_error(
        operator.post(f"{links_url}?link_name=x", data="a=b", content_type="text/plain"), 415
    )
    assert set(ClusterLink.objects.values_list("name", flat=True)) == {taken.name}


def test_deleting_a_link_with_mirrors_needs_force(
    api, make_link, make_topic, topic_name, links_url
):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    admin = api("admin")
    mirrors = f"{links_url}/{link.name}/mirrors"
    assert send(admin, "post", mirrors, {"source_topic_name": topic_name}).status_code == 204

    assert_error(admin.delete(f"{links_url}/{link.name}"), 409, topic_name, "force")
    assert admin.delete(f"{links_url}/{link.name}?force=true&validate_only=true").status_code == 204
    assert ClusterLink.objects.filter(pk=link.pk).exists()
    assert admin.delete(f"{links_url}/{link.name}?force=true").status_code == 204
    assert not ClusterLink.objects.filter(pk=link.pk).exists()
    # Forced: the mirror was failed over first, so the topic is left writable.
    assert memory_kafka.cluster(kafka.DESTINATION.bootstrap).acls_on(topic_name) == set()


# Mirrors -------------------------------------------------------------------------------------


def test_bad_mirror_requests_get_clear_errors(api, make_link, make_topic, topic_name, links_url):
    link = make_link()
    operator = api("operator")
    mirrors = f"{links_url}/{link.name}/mirrors"
    assert_error(send(operator, "post", mirrors, {}), 400, "source_topic_name")
    assert_error(send(operator, "post", mirrors, {"source_topic_name": 5}), 400, "must be a string")
    assert_error(
        send(operator, "post", mirrors, {"source_topic_name": topic_name}),
        404,
        f"Source topic {topic_name!r} does not exist",
    )
    assert_error(operator.get(f"{mirrors}?mirror_status=SLEEPY"), 400, "ACTIVE")
    assert_error(send(operator, "post", f"{mirrors}:pause", {}), 400, "mirror_topic_names")
    assert_error(
        send(operator, "post", f"{mirrors}:pause", {"mirror_topic_name_pattern": "("}),
        400,
        "regex",
    )
    assert_error(operator.get(f"{mirrors}/{topic_name}"), 404, "not a mirror topic")
    assert not MirrorTopic.objects.exists()


def test_hostile_bodies_and_values_get_clear_errors_and_change_nothing(
    api, make_link, make_topic, topic_name, links_url
):
    link = make_link({"cluster.link.paused": "true"})
    operator = api("operator")
    mirrors = f"{links_url}/{link.name}/mirrors"
    source_topic = make_topic(kafka.SOURCE, topic_name)
    events = AuditEvent.objects.count()

    def raw(url: str, body: str):
        return operator.post(url, body, content_type="application/json")

    assert_error(raw(mirrors, "[" * 100_000), 400, "nested too deeply")
    assert_error(raw(mirrors, '{"a": ' + "9" * 5000 + "}"), 400, "number too long")
    assert_error(raw(mirrors, '{"a": 1'), 400, "not valid JSON", "line 1, column 8")
    assert_error(raw(mirrors, '{"a": "' + "x" * 5_000_000 + '"}'), 413, "larger than")
    for factor in (2**31, 2**63, 40000, 0):
        body = {"source_topic_name": source_topic, "replication_factor": factor}
        assert_error(send(operator, "post", mirrors, body), 400, "from 1 to 32767")
    # names are matched whole: a trailing newline is not a name
    assert_error(send(operator, "post", mirrors, {"source_topic_name": "x\n"}), 400, "Invalid")
    assert_error(
        send(operator, "post", f"{links_url}?link_name=x%0A", {"configs": []}),
        400,
        "Invalid link name",
    )
    # configs as Kafka would take them
    for name, value, says in (
        ("metadata.max.age.ms", str(2**63), "from 1 to 9223372036854775807"),
        ("metadata.max.age.ms", "9" * 5000, "from 1 to"),
        ("topic.config.sync.ms", str(2**31), "from 1 to 2147483647"),
        ("topic.config.sync.ms", "٣", "whole number"),
        ("bootstrap.servers", "localhost:9092,junk", "'junk', which is not host:port"),
        ("bootstrap.servers", "localhost:0", "a port from 1 to 65535"),
        ("mirror.start.offset.spec", "1969-12-31T23:59:59Z", "before 1970-01-01"),
    ):
        response = send(
            operator,
            "put",
            f"{links_url}/{link.name}/configs:alter",
            {"data": [{"name": name, "value": value}]},
        )
        assert_error(response, 400, says)
        assert "int()" not in response.json()["message"]
    # a user's regex runs in RE2: linear time, and its syntax said when refused
    assert_error(
        send(operator, "post", f"{mirrors}:pause", {"mirror_topic_name_pattern": "(?=x)x"}),
        400,
        "RE2 syntax",
    )
    assert not MirrorTopic.objects.exists()
    # backtracking would take ages over this name (Python's re: 2^len); RE2 answers at once
    create_mirror(audit.Actor.system("tests"), link, source_topic)
    assert len(source_topic) > 40
    catastrophic = {"mirror_topic_name_pattern": "(.*.*)*X"}
    assert_error(send(operator, "post", f"{mirrors}:pause", catastrophic), 400, "No mirror topic")
    assert ClusterLink.objects.get(pk=link.pk).configs == link.configs
    assert AuditEvent.objects.exclude(result="refused").count() == events + 1  # the mirror
