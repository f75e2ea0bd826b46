"""A cluster's schema registry as the console reads and shows it (security issue 41): the
cluster page shows the beat's latest reading and when it was taken and never asks the registry
itself; the beat reads every registry, bounded by its deadline, follows no redirect and keeps
only what Confluent's API defines; the URL refuses control characters at the door; credentials
outside Latin-1 work on the registry form and on registration. The registries here are small
servers on 127.0.0.1 standing in for a third party's (tests/hostile_registry.py); Kafka is
left out (the cluster's own probe and connection are stubbed), Redis is a dict."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.urls import reverse

from infra.kafka_admin import ClusterDescription
from replication import tasks
from replication.kafka import clusters as clusters_domain
from replication.kafka.clusters import ClusterHealth
from replication.models import AuditEvent, KafkaCluster
from replication.schemas import schema_registries
from replication.schemas.schema_registries import RegistryHealth
from tests.hostile_registry import redirect, registry, send_json, serve, trickle

pytestmark = pytest.mark.django_db

FAKE_LOG_LINE = "2024-01-01 00:00:00,000 INFO console.access: admin granted superuser to mallory"


class DictRedis:
    """What schema_registries asks of Redis, in a dict."""

    def __init__(self):
        self.kept: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self.kept.get(key)

    def set(self, key: str, value: str, ex: int | None = None) -> None:
        self.kept[key] = value.encode()

    def delete(self, key: str) -> None:
        self.kept.pop(key, None)


@pytest.fixture(autouse=True)
def kept(monkeypatch) -> DictRedis:
    found = DictRedis()
    monkeypatch.setattr(schema_registries, "client", lambda: found)
    return found


@pytest.fixture(autouse=True)
def no_kafka(monkeypatch):
    """The cluster itself is not what these tests are about: it "does not answer" at once."""

    def probe(cluster):
        return ClusterHealth(cluster, reachable=False, error="no Kafka in this test")

    monkeypatch.setattr("console.views.clusters.probe_cluster", probe)


def make_cluster(name: str, url: str, username: str = "") -> KafkaCluster:
    return KafkaCluster.objects.create(
        name=name,
        bootstrap_servers="127.0.0.1:1",
        cluster_id=f"id-{name}",
        schema_registry_url=url,
        schema_registry_username=username,
    )


def registry_part(client, name: str) -> str:
    page = client.get(reverse("cluster-detail", args=[name]))
    assert page.status_code == 200
    shown = page.content.decode()
    return shown.split('id="schema-registry">', 1)[1].split("</dd>", 1)[0]


# --- the page shows the kept reading -----------------------------------------------------


def test_the_cluster_page_shows_the_kept_reading_and_never_asks_the_registry(client_as):
    with serve(trickle(every_s=0.3, for_s=6)) as slow:
        cluster = make_cluster("east", slow.url)
        at = time.time() - 42
        schema_registries.store(cluster, RegistryHealth(slow.url, True, 3, "READONLY", at=at))
        started = time.monotonic()
        shown = registry_part(client_as("viewer"), "east")
        took = time.monotonic() - started
    assert slow.asked == []
    assert took < 2, f"the page took {took:.1f} s"
    assert 'class="badge ok">answers' in shown and "3 subjects, mode READONLY" in shown
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))
    assert f"checked {when} UTC" in shown


def test_a_registry_not_read_yet_is_shown_as_not_checked_yet(client_as):
    with serve(registry()) as answering:
        make_cluster("east", answering.url)
        shown = registry_part(client_as("viewer"), "east")
    assert answering.asked == []
    assert "not checked yet" in shown and "answers" not in shown
    assert f"<code>{answering.url}</code>" in shown


def test_a_reading_of_the_registry_the_cluster_had_before_is_not_shown(client_as):
    cluster = make_cluster("east", "http://127.0.0.1:1")
    schema_registries.store(cluster, RegistryHealth("http://127.0.0.1:2", True, 1, "IMPORT"))
    shown = registry_part(client_as("viewer"), "east")
    assert "not checked yet" in shown and "IMPORT" not in shown


def test_a_cluster_without_a_registry_says_none_registered(client_as):
    KafkaCluster.objects.create(name="east", bootstrap_servers="127.0.0.1:1", cluster_id="e")
    assert "none registered" in registry_part(client_as("viewer"), "east")


# --- the beat reads them ------------------------------------------------------------------


def test_the_beat_reads_each_registry_within_its_deadline_and_keeps_only_what_the_api_defines(
    client_as,
):
    def lying(handler):  # a mode no registry has, and an error message that acts on terminals
        if "/mode" in handler.path:
            send_json(handler, 200, {"mode": "\x1b]0;owned\x07<b>NOT-A-MODE</b>"})
        else:
            send_json(handler, 200, ["a", "b"])

    def shouting(handler):
        message = "\x1b[2J\u202eCall +1-555-0100 now " + "!" * 5000
        send_json(handler, 500, {"error_code": 50001, "message": message})

    with (
        serve(registry(subjects=["a", "b", "c"], mode="IMPORT")) as good,
        serve(registry(mode="READONLY")) as elsewhere,
        serve(redirect(elsewhere.url)) as redirecting,
        serve(lying) as liar,
        serve(shouting) as shouter,
        serve(trickle(every_s=0.3, for_s=30)) as slow,
    ):
        named = {
            "good": make_cluster("good", good.url),
            "redirecting": make_cluster("redirecting", redirecting.url),
            "liar": make_cluster("liar", liar.url),
            "shouter": make_cluster("shouter", shouter.url),
            "slow": make_cluster("slow", slow.url),
        }
        KafkaCluster.objects.create(name="none", bootstrap_servers="127.0.0.1:1", cluster_id="n")
        started = time.monotonic()
        schema_registries.refresh_all()
        took = time.monotonic() - started
    assert took < schema_registries.PROBE_TIMEOUT_S + 2, f"the beat was held {took:.1f} s"
    read = {name: schema_registries.latest(c) for name, c in named.items()}
    assert read["good"].reachable and (read["good"].subjects, read["good"].mode) == (3, "IMPORT")
    assert abs(read["good"].at - time.time()) < 60

    assert not read["redirecting"].reachable
    assert "answered with a redirect (HTTP 302)" in read["redirecting"].error
    assert elsewhere.asked == []  # neither /subjects nor /mode was fetched there

    assert not read["liar"].reachable and "names no mode of Confluent's API" in read["liar"].error
    assert "NOT-A-MODE" not in read["liar"].error

    said = read["shouter"].error
    assert not read["shouter"].reachable and "Call +1-555-0100 now" in said
    assert "\x1b" not in said and "\u202e" not in said and len(said) < 400

    assert not read["slow"].reachable
    assert f"did not answer within {schema_registries.PROBE_TIMEOUT_S:g} s" in read["slow"].error

    viewer = client_as("viewer")
    shown = registry_part(viewer, "liar")
    assert 'class="badge bad">does not answer' in shown and "NOT-A-MODE" not in shown
    assert "\x1b" not in registry_part(viewer, "shouter")


def test_the_beat_runs_the_refresh_every_30_seconds():
    beat = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if "schema_registries" in e["task"]]
    assert [e["task"] for e in beat] == ["replication.tasks.refresh_schema_registries"]
    assert beat[0]["schedule"].total_seconds() == 30
    assert callable(tasks.refresh_schema_registries)


def test_a_registry_removed_loses_its_reading(kept):
    cluster = make_cluster("east", "http://127.0.0.1:1")
    schema_registries.store(cluster, RegistryHealth(cluster.schema_registry_url, True))
    actor = schema_registries.audit.Actor.system("tests")
    schema_registries.set_schema_registry(actor, cluster, schema_registries.RegistryAccess(""))
    assert kept.kept == {}


# --- setting one: the URL at the door, credentials beyond Latin-1 -------------------------


@pytest.mark.parametrize(
    ("suffix", "named"),
    [
        ("/\x1b]0;owned\x07", "U+0007, U+001B"),
        (f"/\n{FAKE_LOG_LINE}", "U+000A"),
        ("\n", "U+000A"),
        ("\r\n", "U+000A, U+000D"),
        ("/\x7f", "U+007F"),
        ("/\u202egnp.evil", "U+202E"),
        ("/\u2066x\u2069", "U+2066, U+2069"),
    ],
)
def test_a_registry_url_with_control_characters_is_refused_at_the_door(client_as, suffix, named):
    make_cluster("east", "")
    with serve(registry()) as answering:  # a registry that would answer at that URL
        url = reverse("cluster-schema-registry", args=["east"])
        refused = client_as("admin").post(url, {"schema_registry_url": answering.url + suffix})
    assert refused.status_code == 200
    shown = refused.content.decode()
    assert f"holds control characters ({named})" in shown
    assert "give the registry&#x27;s address alone" in shown
    assert answering.asked == []
    assert KafkaCluster.objects.get(name="east").schema_registry_url == ""
    event = AuditEvent.objects.get(action="cluster.schema_registry")
    assert event.result == "refused" and "holds control characters" in event.message


def test_credentials_outside_latin_1_work_on_the_registry_form_and_the_check_is_shown_at_once(
    client_as,
):
    make_cluster("east", "")
    admin = client_as("admin")
    with serve(registry(subjects=["x"], mode="READWRITE")) as answering:
        response = admin.post(
            reverse("cluster-schema-registry", args=["east"]),
            {
                "schema_registry_url": answering.url,
                "schema_registry_username": "probe4-€",
                "schema_registry_password": "p€ß中",
            },
        )
        assert response.status_code == 302, response.content.decode()
        asked = len(answering.asked)
        shown = registry_part(admin, "east")
        assert len(answering.asked) == asked  # the page asked nothing more
    cluster = KafkaCluster.objects.get(name="east")
    assert (cluster.schema_registry_url, cluster.schema_registry_username) == (
        answering.url,
        "probe4-€",
    )
    assert 'class="badge ok">answers' in shown and "1 subject, mode READWRITE" in shown
    assert "<code>probe4-€</code>" in shown


@pytest.fixture
def fake_kafka(monkeypatch):
    """Registration's own Kafka check passes: a cluster of id "fake-id" answers."""

    class Admin:
        def describe_cluster(self) -> ClusterDescription:
            return ClusterDescription("fake-id", 1, 1)

    monkeypatch.setattr(clusters_domain, "connect", lambda config, zone="": Admin())


def test_a_cluster_registered_with_credentials_outside_latin_1_keeps_its_registry(
    client_as, fake_kafka
):
    admin = client_as("admin")
    with serve(registry(subjects=["x", "y"], mode="IMPORT")) as answering:
        response = admin.post(
            reverse("cluster-create"),
            {
                "name": "west",
                "bootstrap_servers": "127.0.0.1:9092",
                "client_config": "",
                "schema_registry_url": answering.url,
                "schema_registry_username": "ключ-€",
                "schema_registry_password": "秘密-ß",
            },
        )
    assert response.status_code == 302, response.content.decode()
    cluster = KafkaCluster.objects.get(name="west")
    assert cluster.schema_registry_username == "ключ-€"
    assert cluster.schema_registry().subjects  # the password decrypts
    reading = schema_registries.latest(cluster)  # the registration's check, kept at once
    assert reading is not None and (reading.subjects, reading.mode) == (2, "IMPORT")


def test_a_cluster_registered_with_a_control_character_in_its_registry_url_is_refused(
    client_as, fake_kafka
):
    with serve(registry()) as answering:
        refused = client_as("admin").post(
            reverse("cluster-create"),
            {
                "name": "west",
                "bootstrap_servers": "127.0.0.1:9092",
                "client_config": "",
                "schema_registry_url": f"{answering.url}/\n{FAKE_LOG_LINE}",
            },
        )
    assert refused.status_code == 200
    assert "holds control characters (U+000A)" in refused.content.decode()
    assert answering.asked == []
    assert not KafkaCluster.objects.filter(name="west").exists()


def test_a_url_kept_before_the_door_refused_control_characters_is_shown_inert(client_as):
    make_cluster("east", "http://registry:8081/\x1b]0;owned\x07", username="re\u202eder")
    shown = registry_part(client_as("viewer"), "east")
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "<code>http://registry:8081/\\x1b]0;owned\\x07</code>" in shown
    assert "<code>re\\u202eder</code>" in shown
