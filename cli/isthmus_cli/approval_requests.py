"""kafka-mirrors' approval requests: list, show, approve, reject and withdraw them. A request is
shown with its plan, as the console's page shows it: what approving does in words, the clusters
and the direction, each topic's dry run (a truncate-and-restore's per partition), whether
producers still write the topics, which consumer groups read them and whether their offsets are
synced, and the console page of every object named; now (for a pending request) and as it was
when asked."""

from __future__ import annotations

import urllib.parse

from isthmus_cli.common import Session


def requests(session: Session, args) -> None:
    """Approve, reject, withdraw, show or list approval requests."""
    base = f"/clusters/{session.cluster_id}/approval-requests"
    if args.list_requests:
        for r in session.call("GET", base, state="PENDING,APPROVED")["data"]:
            print(request_line(r))
        return
    verb, pk = next(
        (v, getattr(args, v.replace("-", "_")))
        for v in ("approve", "reject", "withdraw", "describe-request")
        if getattr(args, v.replace("-", "_"))
    )
    path = f"{base}/{urllib.parse.quote(pk, safe='')}"
    if verb == "describe-request":
        found = session.call("GET", path)
    else:
        body = {"reason": args.reason} if verb == "reject" else None
        found = session.call("POST", f"{path}:{verb}", body)
    print("\n".join(request_lines(found)))


def request_line(r: dict) -> str:
    direction = ""
    if r.get("plan_at_request"):
        plan = r["plan_at_request"]
        direction = f"  From: {plan['source_cluster']}  To: {plan['destination_cluster']}"
    return (
        f"Request: {r['id']}  Action: {r['action']}  Link: {r['link_name']}{direction}  "
        f"Topics: [{', '.join(r['mirror_topic_names'])}]  State: {r['state']}  "
        f"Approvals: {len(r['approved_by'])}/{r['approvals_required']}  "
        f"Requester: {r['requester']}  Reason: {r['reason']}"
    )


def request_lines(r: dict) -> list[str]:
    """The request, its result once it ran, and its plans (now, and when asked)."""
    lines = [request_line(r)]
    for topic in r["result"] or []:
        lines.append(
            f"    Topic: {topic['mirror_topic']}  State: {topic['state']}  "
            f"Error: {topic['error'] or '-'}"
        )
    if r.get("plan_now"):
        lines += plan_lines("What approving does now", r["plan_now"])
    elif r.get("plan_now_error"):
        lines.append(f"What approving does now cannot be read: {r['plan_now_error']}")
    if r.get("plan_at_request"):
        lines += plan_lines("What it would have done when asked", r["plan_at_request"])
    return lines


def plan_lines(title: str, plan: dict) -> list[str]:
    lines = [
        f"{title} (read {plan['read_at']}): {plan['summary']}",
        f"  Direction: {plan['direction']}",
        *(f"  - {effect}" for effect in plan["effects"]),
    ]
    for t in plan["topics"]:
        lags = " ".join(f"{p}:{lag}" for p, lag in t["lags"].items()) or "-"
        lines.append(
            f"  Topic: {t['mirror_topic']}  State: {t['state'] or '-'}  Lag: {lags}  "
            f"Error: {t['error'] or '-'}"
        )
        if t["partitions"]:
            lines.append("    Partition  TruncatedTo  SetAside  CopiedAcross")
            lines += [
                f"    {p['partition_id']:<9}  {p['offset_truncated_to']:<11}  "
                f"{p['messages_truncated']:<8}  {p['records_to_copy']}"
                for p in t["partitions"]
            ]
    for w in plan["producers"]:
        lines.append(f"  Producers: {w['topic']} on {w['cluster']}: {w['state']}. {w['words']}")
    for g in plan["groups"]:
        lines.append(f"  Group: {g['group']} on {g['cluster']} reads {g['topic']}: {g['words']}")
    lines += [f"  Warning: {problem}" for problem in plan["problems"]]
    lines += [f"  {o['kind'].title()} {o['name']}: {o['url']}" for o in plan["objects"]]
    return lines
