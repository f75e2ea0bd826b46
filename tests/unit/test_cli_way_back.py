"""The command-line tools' words for the way back: `kafka-mirrors --describe --include-actions`
(a primary's mirror, the actions available now, why the others cannot run) and
`kafka-cluster-links --delete` of a bidirectional link (its other half deleted with it); and
`kafka-mirrors --describe --link L` showing L's mirrors alone, as the seed's command reference
types it."""

from __future__ import annotations

from types import SimpleNamespace

from isthmus_cli import cluster_links, mirrors


def test_describe_prints_where_a_primarys_mirror_is_and_why_each_other_action_cannot_run(capsys):
    mirrors._print_standing(
        {
            "mirrored_by": {
                "mirror_topic_name": "pay",
                "cluster_name": "east",
                "link_name": "bidi",
                "mirror_status": "ACTIVE",
            },
            "actions": [
                {"action": "promote", "available": False, "reason": "It is STOPPED."},
                {"action": "truncate-and-restore", "available": False, "reason": "Reverse it."},
            ],
        }
    )
    assert capsys.readouterr().out.splitlines() == [
        "    Primary: mirrored by pay on east over link bidi (ACTIVE)",
        "    Actions: none now",
        "    Not now: promote: It is STOPPED.",
        "    Not now: truncate-and-restore: Reverse it.",
    ]


class _Console:
    """The API as the tool reaches it: a bidirectional link's answer, and its DELETE."""

    def __init__(self):
        self.calls = []

    def link_path(self, link: str) -> str:
        return f"/links/{link}"

    def call(self, method: str, path: str, body=None, **query):
        self.calls.append((method, path, query))
        if method == "GET":
            other = {"cluster_name": "west", "cluster_id": "w-1", "topic_names": ["a", "b"]}
            return {"other_half": {**other, "flow_names": ["f"]}}
        return None


def test_deleting_a_bidirectional_link_says_its_other_half_went_with_it(capsys):
    console = _Console()
    args = SimpleNamespace(link="bidi", force=True, validate_only=False, reason="moving")

    cluster_links.delete(console, args)

    assert [c[0] for c in console.calls] == ["GET", "DELETE"]
    assert capsys.readouterr().out.splitlines() == [
        "Cluster link 'bidi' deletion successfully completed.",
        "It is bidirectional: its other half, into west (w-1), was deleted with it, with its 2 "
        "mirror topic(s) and 1 merge flow(s); every topic stays on both clusters.",
    ]


class _Mirrors:
    """The API's mirror lists as the tool reaches them: one mirror on each of two links."""

    def __init__(self):
        self.asked = []

    def link_path(self, link: str, *rest: str) -> str:
        return "/".join([f"/links/{link}", *rest])

    def call(self, method: str, path: str, body=None, **query):
        self.asked.append(path)
        link = path.split("/")[2]
        mirror = {
            "mirror_topic_name": f"orders-{link}",
            "link_name": link,
            "link_id": "id",
            "source_topic_name": "orders",
            "mirror_status": "ACTIVE",
            "source_topic_id": "t",
            "state_time_ms": 0,
            "mirror_lags": [],
            "status_errors": [],
        }
        return {"data": [mirror]}


def test_describe_with_link_shows_that_links_mirrors_only(capsys):
    api = _Mirrors()
    args = SimpleNamespace(
        link="east",
        links=None,
        topics=None,
        pending_stopped_only=False,
        include_actions=False,
        include_verification=False,
    )

    mirrors.describe(api, args)

    assert api.asked == ["/links/east/mirrors"]
    assert "Topic: orders-east  LinkName: east" in capsys.readouterr().out
