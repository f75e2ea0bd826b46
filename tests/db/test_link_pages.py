"""The link and mirror pages, driven with Django's test client on in-memory clusters (what needs
real brokers: tests/integration/test_link_pages.py)."""

from django.urls import reverse

from devstack import kafka
from replication.governance import audit
from replication.models import ApprovalRequest, AuditEvent, ClusterLink, MirrorTopic
from replication.topics.mirrors import create_mirror


def detail_url(link):
    return reverse("link-detail", args=[link.destination.name, link.name])


def mirror_url(topic):
    return reverse("mirror-detail", args=["destination", topic])


def test_viewers_see_links_with_their_state_but_cannot_change_them(make_link, client_as):
    link = make_link(name="seen-link")
    client = client_as("viewer")
    page = client.get(reverse("links")).content.decode()
    assert "seen-link" in page and 'data-state="ACTIVE"' in page
    assert "Create link" not in page
    assert client.get(reverse("link-create")).status_code == 403
    assert client.post(reverse("link-pause", args=["destination", link.name])).status_code == 403
    assert "/pause/" not in client.get(detail_url(link)).content.decode()


def test_creating_a_link_shows_config_errors_inline_and_saves_nothing(
    registered_clusters, client_as
):
    form = {
        "name": "web-link",
        "destination": registered_clusters["destination"].pk,
        "configs": f"bootstrap.servers={kafka.SOURCE.bootstrap}\nmetadata.max.age=5000",
    }
    response = client_as("operator").post(reverse("link-create"), form)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Unknown link config &#x27;metadata.max.age&#x27;" in page
    assert "Valid link configs: bootstrap.servers" in page
    assert not ClusterLink.objects.exists()


def test_creating_a_link_says_every_problem_at_once_each_under_its_field(make_link, client_as):
    taken = make_link({"cluster.link.paused": "true"})
    form = {
        "name": taken.name,
        "destination": taken.destination.pk,
        "configs": "bootstrap.servers=127.0.0.1:1\nmetadata.max.age=5000",
    }
    page = client_as("operator").post(reverse("link-create"), form).content.decode()
    name_error = page.index(
        f"A cluster link named &#x27;{taken.name}&#x27; already exists on destination."
    )
    configs_error = page.index("did you mean &#x27;metadata.max.age.ms&#x27;?")
    # Each under its own field, and no word from the source (nothing was asked of it).
    assert page.index('name="name"') < name_error < page.index('name="destination"')
    assert page.index('name="configs"') < configs_error
    assert "Could not describe the cluster" not in page
    assert 'data-busy="Asking the source cluster…"' in page
    assert ClusterLink.objects.count() == 1


def test_setting_and_resetting_configs_from_the_page(make_link, client_as):
    link = make_link({"topic.config.sync.ms": "2000"})
    client = client_as("operator")
    url = reverse("link-configs-alter", args=["destination", link.name])
    client.post(url, {"set": "metadata.max.age.ms=5000", "reset": "topic.config.sync.ms"})
    link.refresh_from_db()
    assert link.configs["metadata.max.age.ms"] == "5000"
    assert "topic.config.sync.ms" not in link.configs

    # A refused change shows the page again, with what was typed and why beside the form.
    response = client.post(url, {"set": "cluster.link.prefix=x.", "reset": ""})
    page = response.content.decode()
    assert response.status_code == 400 and 'id="config-error"' in page
    assert "cannot be changed" in page and "\ncluster.link.prefix=x.</textarea>" in page
    # Where the eye lands: the page opens at the form (its action's #configs), the error just
    # above it, the configs set next, those at their defaults folded away below.
    assert f'action="{url}#configs"' in page and 'id="configs"' in page
    order = ['id="config-error"', 'id="config-form"', 'id="configs-set"', 'id="configs-default"']
    assert [page.index(mark) for mark in order] == sorted(page.index(mark) for mark in order)
    set_part, default_part = page.split('id="configs-default"')
    assert '<tr data-config="metadata.max.age.ms">' in set_part.split('id="configs-set"')[1]
    assert '<tr data-config="topic.config.sync.ms">' in default_part

    last = AuditEvent.objects.order_by("-id").first().id
    response = client.post(url, {"set": "", "reset": ""}, follow=True)
    assert "Nothing to change: give configs to set" in response.content.decode()
    assert "Changed the configs" not in response.content.decode()
    assert [e.result for e in AuditEvent.objects.filter(id__gt=last)] == ["refused"]


def test_the_link_page_pauses_in_one_click_and_the_pause_address_alone_asks_first(
    make_link, client_as
):
    link = make_link()
    client = client_as("operator")
    url = reverse("link-pause", args=["destination", link.name])
    page = client.get(reverse("link-detail", args=["destination", link.name])).content.decode()
    assert f'<form method="post" action="{url}">' in page  # the button posts: no page between
    confirm = client.get(url)
    assert "Pause cluster link" in confirm.content.decode()
    link.refresh_from_db()
    assert link.state == "ACTIVE"  # asking changed nothing
    client.post(url)
    link.refresh_from_db()
    assert link.state == "PAUSED"
    client.post(reverse("link-resume", args=["destination", link.name]))
    link.refresh_from_db()
    assert link.state == "ACTIVE"
    assert AuditEvent.objects.filter(action="link.pause", actor_name="operator").exists()


def test_several_mirrors_are_created_at_once_and_one_refused_stops_no_other(
    make_link, make_topic, topic_name, client_as
):
    link = make_link({"cluster.link.paused": "true"})
    first, second = (make_topic(kafka.SOURCE, f"{topic_name}-{n}") for n in ("a", "b"))
    missing = f"{topic_name}-missing"
    client = client_as("operator")
    url = reverse("mirror-create", args=["destination", link.name])

    response = client.post(url, {"source_topic": f"{first}, {missing}\n{first}", "configs": ""})
    page = response.content.decode()
    assert response.status_code == 200 and f"Created mirror topic {first}." in page
    assert f"{missing}: " in page and "does not exist on the source cluster" in page
    assert f'value="{missing}"' in page  # the form again, with only the one that failed
    response = client.post(url, {"source_topic": second, "configs": ""})
    assert response["Location"] == mirror_url(second)
    assert set(MirrorTopic.objects.filter(link=link).values_list("mirror_topic", flat=True)) == {
        first,
        second,
    }
    assert AuditEvent.objects.filter(action="mirror.create", result="refused").count() == 1

    too_many = " ".join(f"t{i}" for i in range(101))
    refused = client.post(url, {"source_topic": too_many, "configs": ""}).content.decode()
    assert "101 topics: create at most 100 mirrors at once." in refused


def test_an_operator_only_asks_to_delete_and_a_link_with_mirrors_needs_force(
    make_link, make_topic, topic_name, client_as
):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(audit.Actor.system("tests"), link, topic_name)
    url = reverse("link-delete", args=["destination", link.name])
    typed = {"confirm_name": link.name}
    assert "still has mirror topics" in client_as("operator").post(url, typed).content.decode()
    assert client_as("viewer").post(url, typed).status_code == 403

    admin = client_as("admin")
    page = admin.get(url).content.decode()
    assert "Force: fail its mirror topics over first" in page
    # The confirmation names what forcing would fail over, and wants the link's name typed.
    assert f'<ul id="to-fail-over"><li><code>{topic_name}</code></li></ul>' in page
    assert f"Type <code>{link.name}</code> to confirm" in page
    for wrong in ({}, {"confirm_name": f"{link.name}x", "force": "on"}):
        refused = admin.post(url, wrong).content.decode()
        assert f"Type {link.name} to confirm" in refused
    refused = admin.post(url, typed, follow=True).content.decode()
    assert f"still has mirror topics: {topic_name}" in refused
    assert ClusterLink.objects.filter(pk=link.pk).exists()
    assert MirrorTopic.objects.get(mirror_topic=topic_name).state == "ACTIVE"


def test_an_admin_deletes_a_mirror_topic(make_link, make_topic, topic_name, client_as):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(audit.Actor.system("tests"), link, topic_name)
    url = reverse("mirror-delete", args=["destination", topic_name])
    assert client_as("operator").post(url).status_code == 403
    admin = client_as("admin")
    assert f"Type <code>{topic_name}</code> to confirm" in admin.get(url).content.decode()
    # What cannot be undone needs the name typed: a wrong one deletes nothing.
    refused = admin.post(url, {"confirm_name": "something-else"}, follow=True)
    assert f"Type {topic_name} to confirm; nothing was changed." in refused.content.decode()
    assert MirrorTopic.objects.filter(mirror_topic=topic_name).exists()
    response = admin.post(url, {"confirm_name": topic_name})
    assert response.status_code == 302 and response["Location"] == detail_url(link)
    assert not MirrorTopic.objects.filter(mirror_topic=topic_name).exists()


def test_a_failover_or_promote_needs_the_mirrors_name_typed(
    make_link, make_topic, topic_name, client_as
):
    link = make_link({"cluster.link.paused": "true"})
    make_topic(kafka.SOURCE, topic_name)
    state = create_mirror(audit.Actor.system("tests"), link, topic_name).state
    admin = client_as("admin")
    for action in ("mirror-failover", "mirror-promote"):
        url = reverse(action, args=["destination", topic_name])
        assert f"Type <code>{topic_name}</code> to confirm" in admin.get(url).content.decode()
        for typed in ("", link.name, f" {topic_name}x"):
            page = admin.post(url, {"reason": "r", "confirm_name": typed}).content.decode()
            assert f"Type {topic_name} to confirm" in page
    assert not ApprovalRequest.objects.filter(link=link).exists()
    assert MirrorTopic.objects.get(mirror_topic=topic_name).state == state
    assert not AuditEvent.objects.filter(action__in=["mirror.failover", "mirror.promote"]).exists()


def test_the_mirror_list_filters_by_state(make_link, make_topic, topic_name, client_as):
    link = make_link()
    make_topic(kafka.SOURCE, topic_name)
    create_mirror(audit.Actor.system("tests"), link, topic_name)
    client = client_as("viewer")
    assert topic_name in client.get(reverse("mirrors")).content.decode()
    assert topic_name not in client.get(reverse("mirrors") + "?state=PAUSED").content.decode()


def test_the_mirror_list_searches_by_name_and_pages(
    make_link, make_topic, topic_name, client_as, monkeypatch
):
    from console.views import mirrors as mirror_pages

    link = make_link({"cluster.link.paused": "true"})
    names = [make_topic(kafka.SOURCE, f"{topic_name}-{n}") for n in ("apple", "berry")]
    for name in names:
        create_mirror(audit.Actor.system("tests"), link, name)
    monkeypatch.setattr(mirror_pages, "PAGE_SIZE", 1)
    client = client_as("viewer")

    found = client.get(reverse("mirrors"), {"q": "-APPLE"}).content.decode()
    assert f'data-mirror="{names[0]}"' in found and f'data-mirror="{names[1]}"' not in found
    first = client.get(reverse("mirrors"), {"q": topic_name}).content.decode()
    assert "1–1 of 2" in first and f'href="?q={topic_name}&amp;page=2" rel="next"' in first
    second = client.get(reverse("mirrors"), {"q": topic_name, "page": "2"}).content.decode()
    assert f'data-mirror="{names[1]}"' in second and 'rel="prev"' in second
    too_long = client.get(reverse("mirrors"), {"q": "x" * 250}).content.decode()
    assert "A topic name is one line of at most 249 characters" in too_long


def test_unknown_links_and_mirrors_are_not_found(registered_clusters, client_as):
    client = client_as("viewer")
    assert client.get(reverse("link-detail", args=["destination", "nope"])).status_code == 404
    assert client.get(mirror_url("nope")).status_code == 404
