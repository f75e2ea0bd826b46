"""The OpenAPI document against the real API: every documented path answers as documented, and
every route of the API is documented.

The operations are taken from the document itself, so a newly documented path is covered
without touching this module.
"""

from __future__ import annotations

import copy
import json
import re
from urllib.parse import urlencode

import pytest

from console.api.base import ERROR_CODES
from console.api.openapi import SPEC
from devstack import kafka
from replication.actions import approvals
from replication.governance import audit
from replication.governance.tokens import create_token
from replication.models import Gateway, MirrorTopic, Verification
from replication.topics import merge_flows
from tests import schema_checks
from tests.url_routes import api_routes

PREFIX = SPEC["servers"][0]["url"]
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
CONFIG = "metadata.max.age.ms"
# Answers that would mean the path is not really there, or broke.
NEVER = {404, 405, 500}


def token(user, name: str = "t") -> str:
    _, secret = create_token(audit.Actor.system("tests"), user, name)
    return f"Bearer {secret}"


def resolve(node):
    return schema_checks.resolve(node, SPEC)


def documented_operations():
    """(path, METHOD, operation, parameters) for every operation of the document."""
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                params = [
                    resolve(p) for p in [*item.get("parameters", []), *op.get("parameters", [])]
                ]
                yield path, method.upper(), op, params


def real_example(example: dict, *, mirror: str, fresh_topic: str, source_cluster_id: str):
    """A documented request-body example, with its names made those of the real objects."""
    body = copy.deepcopy(example)
    if "source_topic_name" in body:  # a new mirror: of a source topic not mirrored yet
        body["source_topic_name"] = fresh_topic
        if "mirror_topic_name" in body:
            body["mirror_topic_name"] = fresh_topic
    if "mirror_topic_names" in body:
        body["mirror_topic_names"] = [mirror]
    if "mirror_topic_name_pattern" in body:
        body["mirror_topic_name_pattern"] = re.escape(mirror)
    if "source_cluster_id" in body:
        body["source_cluster_id"] = source_cluster_id
    for entry in body.get("configs", []):
        if entry.get("name") == "bootstrap.servers":
            entry["value"] = kafka.SOURCE.bootstrap
    return body


def test_every_route_of_the_api_is_documented_with_the_permission_it_needs():
    documented = {(path, method): op for path, method, op, _ in documented_operations()}
    actual = api_routes()
    assert set(documented) == set(actual)
    assert {key: op["x-isthmus-action"] for key, op in documented.items()} == actual


def test_every_documented_path_answers_as_documented(
    client, users, memory_clusters, registered_clusters, make_link, make_topic, topic_name
):
    auth = token(users["admin"])
    destination = registered_clusters["destination"]
    link = make_link({CONFIG: "5000"})
    source_topic = make_topic(kafka.SOURCE, topic_name)
    fresh_topic = make_topic(kafka.SOURCE, f"{topic_name}-fresh")
    made = client.post(
        f"{PREFIX}/clusters/{destination.cluster_id}/links/{link.name}/mirrors",
        {"source_topic_name": source_topic},
        content_type="application/json",
        HTTP_AUTHORIZATION=auth,
    )
    assert made.status_code == 204, made.content
    # An operator's promote that waits for two approvals: the admin's approval below leaves it
    # PENDING, so reject still finds it open (and withdraw is the requester's alone: 403).
    link.approvals_required = 2
    link.save(update_fields=["approvals_required"])
    asked = approvals.submit(
        audit.Actor(user=users["operator"], name="operator"),
        link,
        "promote",
        [source_topic],
        "documented",
    )
    group = f"{topic_name}-group"  # a group that committed an offset on the mirror
    memory_clusters["destination"].commit(group, {(source_topic, 0): 0})
    values = {
        "cluster_id": destination.cluster_id,
        "link_name": link.name,
        "config_name": CONFIG,
        "mirror_topic_name": source_topic,  # the link has no prefix
        "request_id": str(asked.request.pk),
        "verification_id": str(
            Verification.objects.create(
                mirror=MirrorTopic.objects.get(mirror_topic=source_topic), requested_by="tests"
            ).pk
        ),
        "topic_name": source_topic,
        "partition_id": "0",
        "name": "cleanup.policy",
        "consumer_group_id": group,
        "broker_id": "1",
        "broker_config_name": "auto.create.topics.enable",
        "flow_name": merge_flows.create_flow(
            audit.Actor.system("tests"), link, source_topic, f"{topic_name}.merged"
        ).name,
        # Its proxy not started: the example bodies name clusters that are not registered, so
        # no call here starts one (tests/integration/test_gateways.py starts real ones).
        "gateway_name": Gateway.objects.create(
            name="documented", port=29500, route=destination
        ).name,
    }

    problems, answered = [], []
    # Deletes last, so what they remove is still there for the others.
    for path, method, op, params in sorted(documented_operations(), key=lambda o: o[1] == "DELETE"):
        where = f"{method} {path}"
        url = PREFIX + re.sub(r"{(\w+)}", lambda m: values[m[1]], path)
        query = {p["name"]: p["example"] for p in params if p["in"] == "query" and p["required"]}
        if any(p["in"] == "query" and p["name"] == "validate_only" for p in params):
            query["validate_only"] = "true"  # a write: checked, not made
        if query:
            url += "?" + urlencode(query)
        data = ""
        if "requestBody" in op:
            example = resolve(op["requestBody"])["content"]["application/json"]["example"]
            body = real_example(
                example,
                mirror=source_topic,
                fresh_topic=fresh_topic,
                source_cluster_id=link.source_cluster_id,
            )
            data = json.dumps(body)
        response = client.generic(
            method, url, data, content_type="application/json", HTTP_AUTHORIZATION=auth
        )
        status = response.status_code
        answered.append(f"{where}: {status}")
        documented = {int(s) for s in op["responses"]}
        if path.endswith("/reassignment") and status == 404:  # never served: says why
            continue  # (tests/db/test_api_brokers.py)
        if status not in documented or status in NEVER:
            problems.append(f"{where} answered {status} {response.content[:500]!r}")
            continue
        if method == "GET" and status != 200:
            problems.append(f"{where} of real objects answered {status} {response.content!r}")
            continue
        content = op["responses"][str(status)].get("content", {})
        if status == 204 or not content:
            if response.content:
                problems.append(f"{where} answered {status} with a body {response.content!r}")
            continue
        assert response["Content-Type"] == "application/json", where
        schema = content["application/json"]["schema"]
        problems += [
            f"{where}: {m}" for m in schema_checks.mismatches(response.json(), schema, SPEC)
        ]

    assert not problems, "\n".join(problems + ["", "Answers:", *answered])


def test_the_document_is_served_to_every_role_and_only_with_authentication(client, users):
    url = f"{PREFIX}/openapi.json"
    response = client.get(url, HTTP_AUTHORIZATION=token(users["viewer"]))
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1.")
    assert document == json.loads(json.dumps(SPEC))
    assert [s["url"] for s in document["servers"]] == ["/kafka/v3", "/kafka/{cluster_name}/v3"]

    anonymous = client.get(url)
    assert anonymous.status_code == 401
    assert anonymous.json() == {
        "error_code": ERROR_CODES[401],
        "message": anonymous.json()["message"],
    }
    assert anonymous.json()["message"]
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="isthmus", Basic realm="isthmus"'


# Bodies no client should send: not JSON, not an object, fields of every wrong type, junk
# values, deep nesting, a huge number, bad query flags.
MALFORMED = [
    ("text/plain", "hello"),
    ("application/json", "{"),
    ("application/json", "[1, 2]"),
    ("application/json", '"a string"'),
    ("application/json", "[" * 50_000),
    ("application/json", '{"x": ' + "9" * 5000 + "}"),
    ("application/json", b"\xff\xfe{}"),
]
WRONG_VALUES = [None, 0, -1, 2**64, True, "", "\n", "x" * 10_000, [], {}, [None], {"a": [1]}]


@pytest.mark.no_cover  # a walk of every route's answers, untraced (test_console_malformed.py)
def test_no_route_answers_500_or_html_to_a_malformed_request(
    client, users, registered_clusters, make_link, make_topic, topic_name
):
    auth = token(users["admin"])
    destination = registered_clusters["destination"]
    link = make_link({"cluster.link.paused": "true"})
    values = {
        "cluster_id": destination.cluster_id,
        "link_name": link.name,
        "config_name": CONFIG,
        "mirror_topic_name": make_topic(kafka.SOURCE, topic_name),
        "request_id": "1",
        "verification_id": "1",
        "topic_name": topic_name,
        "partition_id": "0",
        "name": "cleanup.policy",
        "consumer_group_id": "no-such-group",
        "broker_id": "1",
        "broker_config_name": "auto.create.topics.enable",
        "flow_name": "no-such-flow",
        "gateway_name": "no-such-gateway",
    }
    problems = []
    for path, method, op, _ in documented_operations():
        if method == "GET" and "requestBody" not in op:
            bodies = [("application/json", "")]
        else:
            fields = {}
            if "requestBody" in op:
                schema = resolve(op["requestBody"]["content"]["application/json"]["schema"])
                fields = schema.get("properties", {})
            bodies = MALFORMED + [
                ("application/json", json.dumps({name: wrong}))
                for name in fields
                for wrong in WRONG_VALUES
            ]
        url = PREFIX + re.sub(r"{(\w+)}", lambda m: values[m[1]], path)
        for query in ("validate_only=maybe&force=2", "validate_only=true"):
            for content_type, body in bodies:
                response = client.generic(
                    method,
                    f"{url}?{query}",
                    body,
                    content_type=content_type,
                    HTTP_AUTHORIZATION=auth,
                )
                where = f"{method} {path}?{query} {content_type} {str(body)[:60]!r}"
                if response.status_code >= 500 or (
                    response.content and response["Content-Type"] != "application/json"
                ):
                    problems.append(f"{where}: {response.status_code} {response.content[:200]!r}")
                elif response.status_code >= 400:
                    message = response.json()["message"]
                    if "Traceback" in message or "object has no attribute" in message:
                        problems.append(f"{where}: Python's words: {message}")
    assert not problems, "\n".join(problems)
