"""`kafka-mirrors --describe-request` shows a request's plan as the console's page does: what
approving does in words, the direction, a truncate-and-restore's per partition, producers,
consumer groups and the pages of the objects named; now and as it was when asked."""

from __future__ import annotations

from isthmus_cli.approval_requests import request_line, request_lines


def _plan(set_aside: int, **changes) -> dict:
    return {
        "read_at": "2026-11-29T17:40:00+00:00",
        "summary": "Fail back orders on east: truncate it where it and the promoted topic on "
        "west last agree.",
        "source_cluster": "west",
        "destination_cluster": "east",
        "direction": "west → east, over link dr",
        "effects": ["orders on east is truncated per partition to the offset below."],
        "topics": [
            {
                "mirror_topic": "orders",
                "error": "",
                "state": "STOPPED",
                "lags": {},
                "partitions": [
                    {
                        "partition_id": 0,
                        "offset_truncated_to": 5,
                        "messages_truncated": 0,
                        "records_to_copy": 4,
                    },
                    {
                        "partition_id": 1,
                        "offset_truncated_to": 5,
                        "messages_truncated": set_aside,
                        "records_to_copy": 0,
                    },
                ],
            }
        ],
        "producers": [
            {
                "cluster": "east",
                "topic": "orders",
                "state": "WRITING",
                "records": 2,
                "watched_s": 64,
                "words": "Producers still write orders on east: 2 records were written in the "
                "last 64 s.",
            }
        ],
        "groups": [
            {
                "group": "billing",
                "cluster": "west",
                "topic": "orders",
                "sync": "IN_STEP",
                "words": "synced to billing on east: in step",
            }
        ],
        "problems": [],
        "objects": [
            {
                "kind": "link",
                "name": "dr",
                "cluster": "east",
                "link": "dr",
                "url": "https://console/links/east/dr/",
            }
        ],
        **changes,
    }


REQUEST = {
    "id": 8,
    "action": "truncate-and-restore",
    "link_name": "dr",
    "mirror_topic_names": ["orders"],
    "state": "PENDING",
    "approved_by": [],
    "approvals_required": 1,
    "requester": "operator",
    "reason": "the old primary is back",
    "result": [],
    "plan_at_request": _plan(3),
    "plan_now": _plan(5, read_at="2026-11-29T17:45:00+00:00"),
    "plan_now_error": "",
}


def test_a_request_is_listed_with_its_clusters():
    assert request_line(REQUEST).startswith(
        "Request: 8  Action: truncate-and-restore  Link: dr  From: west  To: east  Topics: [orders]"
    )


def test_a_request_shows_its_plan_now_and_when_asked_with_each_partition():
    lines = request_lines(REQUEST)
    now = lines.index(
        "What approving does now (read 2026-11-29T17:45:00+00:00): Fail back orders on east: "
        "truncate it where it and the promoted topic on west last agree."
    )
    asked = next(i for i, line in enumerate(lines) if line.startswith("What it would have"))
    assert now < asked
    assert lines[now + 1 : now + 8] == [
        "  Direction: west → east, over link dr",
        "  - orders on east is truncated per partition to the offset below.",
        "  Topic: orders  State: STOPPED  Lag: -  Error: -",
        "    Partition  TruncatedTo  SetAside  CopiedAcross",
        "    0          5            0         4",
        "    1          5            5         0",
        "  Producers: orders on east: WRITING. Producers still write orders on east: 2 records "
        "were written in the last 64 s.",
    ]
    assert lines[now + 8 :][:2] == [
        "  Group: billing on west reads orders: synced to billing on east: in step",
        "  Link dr: https://console/links/east/dr/",
    ]
    assert "    1          5            3         0" in lines[asked:]


def test_a_plan_that_cannot_be_read_now_says_why_and_an_old_request_shows_what_it_kept():
    old = {**REQUEST, "plan_now": None, "plan_now_error": "Link dr was deleted."}
    old["plan_at_request"] = None
    assert request_lines(old) == [
        request_line(old),
        "What approving does now cannot be read: Link dr was deleted.",
    ]
