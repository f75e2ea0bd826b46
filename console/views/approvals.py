"""Promote, failover and link deletion from the console, and the approvals queue: requests
with their live progress, approved, rejected or withdrawn here."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import can, require
from console.forms.approvals import ApprovalPolicyForm, RejectForm, StopForm
from console.object_urls import with_urls
from console.views.actions import bound, form_errors
from console.views.links import find_link, link_url
from console.views.mirrors import chosen, find_mirror, mirror_url
from replication.actions import approvals, live_plans
from replication.actions.operations import OPERATIONS
from replication.core.errors import ReplicationError
from replication.cutover import link_deletion, promote, stop_batches
from replication.governance import audit
from replication.models import ApprovalRequest, Gateway
from replication.topics import links

Action = ApprovalRequest.Action
LISTED = 20  # mirror topics named on the delete page; beyond, how many more


def _approvers(count: int) -> str:
    return "an approver" if count == 1 else f"{count} approvers"


def after_asking(request, submission: approvals.Submission, done_url: str, what: str):
    if submission.request is not None:
        messages.success(
            request,
            f"Asked for approval of {what} (request {submission.request.pk}); it runs once "
            f"{_approvers(submission.approvals_needed)} other than you agree.",
        )
        return redirect("approval-detail", submission.request.pk)
    failed = [o for o in submission.outcomes if o.error]
    for outcome in failed:
        messages.error(request, outcome.error)
    if not failed:
        messages.success(request, f"{what[0].upper()}{what[1:]} scheduled. {submission.note}")
    return redirect(done_url)


DOING = {
    Action.PROMOTE: "promoting",
    Action.FAILOVER: "failing over",
    Action.REVERSE_AND_START: "reversing",
    Action.REVERSE_AND_PAUSE: "reversing",
    Action.TRUNCATE_AND_RESTORE: "restoring the old source of",
}


def _acted_on(mirror, action: str) -> tuple:
    """The link and topic an action on `mirror`'s page works on: a truncate-and-restore of a
    failed-over mirror restores its old source, on the other half of the link."""
    if OPERATIONS[action].on_old_source:
        return links.peer_of(mirror.link), mirror.source_topic
    return mirror.link, mirror.mirror_topic


def _may_break_glass(request, action: str) -> bool:
    """Whether the page offers breaking glass: the action allows it and the user may."""
    return OPERATIONS[action].break_glass and can(request.user, "request.override")


def _submitted(request, form, link, action: str, names: list[str], done_url: str, what: str):
    """A valid POST of a stop form asks for the stop: the page after it, or None (a GET, or a
    refusal, which is put on the form)."""
    if request.method != "POST" or not form.is_valid():
        return None
    try:
        submission = approvals.submit(
            audit.Actor.from_request(request),
            link,
            action,
            names,
            form.cleaned_data["reason"],
            break_glass=form.cleaned_data["break_glass"],
            params={"gateway": form.cleaned_data["gateway"]},
        )
    except ReplicationError as exc:
        form.add_error(None, str(exc))
        return None
    return after_asking(request, submission, done_url, what)


def _gateways(request) -> list[Gateway]:
    """The gateways a cutover page offers to move with it: all, to whoever may switch them."""
    return (
        list(Gateway.objects.select_related("route")) if can(request.user, "gateway.manage") else []
    )


def _undone_by(action: str) -> str:
    """How the action is undone, where it can be ("" where it cannot)."""
    if action in stop_batches.REVERSES:
        return "a reverse is undone by reversing back, not by a click."
    return ""


@require("mirror.stop")
def mirror_stop(request, destination, topic, action):
    """Promote, fail over, reverse or fail back one mirror: the dry run, a reason, the outcome."""
    mirror = find_mirror(destination, topic)
    # Bound on any POST: every field is optional, so an empty POST is still an answer.
    form = StopForm(bound(request), name=mirror.mirror_topic, undo=_undone_by(action))
    what = f"{DOING[action]} {mirror.mirror_topic}"
    try:
        link, name = _acted_on(mirror, action)
        plan = approvals.preview(link, action, [name])[0]
    except ReplicationError as exc:  # a reverse on a one-way link, say
        link, name = mirror.link, mirror.mirror_topic
        plan = promote.TopicOutcome(mirror.mirror_topic, str(exc), exc.status)
    answered = _submitted(request, form, link, action, [name], mirror_url(mirror), what)
    if answered is not None:
        return answered
    return render(
        request,
        "approvals/stop.html",
        {
            "mirror": mirror,
            "action": action,
            "plan": plan,
            "form": form,
            "acts_at_once": approvals.acts_at_once(request.user, link),
            "may_break_glass": _may_break_glass(request, action),
            "reverse": action in stop_batches.REVERSES,
            "restore": action == Action.TRUNCATE_AND_RESTORE,
            "gateways": _gateways(request),
        },
    )


@require("mirror.stop")
def link_mirrors_stop(request, destination, name, action):
    """Promote or fail over many mirror topics of a link in one action (one approval): the
    dry run of each, a reason, the link's name typed, the outcome per topic."""
    link = find_link(destination, name)
    if action not in (Action.PROMOTE, Action.FAILOVER):
        raise Http404(f"Mirror topics are promoted or failed over here; not {action[:50]!r}.")
    try:
        names = chosen(request, link)
    except ReplicationError as exc:
        messages.error(request, str(exc))
        return redirect(link_url(link) + "#mirrors")
    form = StopForm(bound(request), name=link.name)
    what = f"{DOING[action]} {len(names)} mirror topic{'s' if len(names) != 1 else ''}"
    answered = _submitted(request, form, link, action, names, link_url(link) + "#mirrors", what)
    if answered is not None:
        return answered
    plan = approvals.preview(link, action, names)
    return render(
        request,
        "approvals/bulk_stop.html",
        {
            "link": link,
            "action": action,
            "names": names,
            "pattern": (request.POST or request.GET).get("pattern", "").strip(),
            "plan": plan,
            "refused": [o for o in plan if o.error],
            "form": form,
            "gateways": _gateways(request),
            "acts_at_once": approvals.acts_at_once(request.user, link),
            "may_break_glass": _may_break_glass(request, action),
        },
    )


@require("link.delete")
def link_delete(request, destination, name):
    link = find_link(destination, name)
    form = StopForm(bound(request), name=link.name)
    if request.method == "POST" and form.is_valid():
        try:
            submission = approvals.submit(
                audit.Actor.from_request(request),
                link,
                Action.DELETE_LINK,
                reason=form.cleaned_data["reason"],
                force=form.cleaned_data["force"],
            )
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            if submission.request is None:
                messages.success(request, f"Deleted cluster link {link.name}.")
                return redirect("links")
            return after_asking(request, submission, reverse("links"), f"deleting link {link.name}")
    found = link_deletion.deletion(link)
    return render(
        request,
        "approvals/delete_link.html",
        {
            "link": link,
            "form": form,
            # Each half with what forcing fails over, by name (the first LISTED), its stopped
            # mirrors and its flows, so the confirmation says exactly what goes and what stays.
            "halves": [_half(half, found.live[half.pk]) for half in found.halves],
            "bidirectional": found.bidirectional,
            "other_half_gone": found.other_half_gone,
            "live_count": sum(len(names) for names in found.live.values()),
            "acts_at_once": approvals.acts_at_once(request.user, link),
        },
    )


def _half(half, live: list[str]) -> dict:
    return {
        "link": half,
        "live": live[:LISTED],
        "count": len(live),
        "more": len(live) - min(len(live), LISTED),
        "stopped": half.mirrors.filter(state="STOPPED").count(),
        "flows": list(half.flows.values_list("name", "destination_topic")[:LISTED]),
    }


@require("approval_policy.manage")
def link_policy(request, destination, name):
    link = find_link(destination, name)
    if request.method != "POST":  # the form is on the link's page
        return redirect(link_url(link))
    form = ApprovalPolicyForm(request.POST)
    if form.is_valid():
        try:
            approvals.set_policy(
                audit.Actor.from_request(request),
                link,
                form.cleaned_data["approvals_required"],
                form.cleaned_data["admin_may_override"],
            )
        except ReplicationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Changed the approval policy of link {link.name}.")
    else:
        messages.error(request, f"{form_errors(form)} Choose 0 to 3 approvals.")
    return redirect(link_url(link))


@require("console.view")
def approval_list(request):
    state = request.GET.get("state") or "open"
    choices = {
        "open": [ApprovalRequest.State.PENDING, ApprovalRequest.State.APPROVED],
        "all": None,
        **{s: [s] for s in ApprovalRequest.State.values},
    }
    # An unknown state (a typo, a stale bookmark) is said, not shown as every request.
    error = (
        ""
        if state in choices
        else f"There is no request state {state[:50]!r}; choose one of {', '.join(choices)}."
    )
    template = "approvals/list.html#requests" if request.htmx else "approvals/list.html"
    return render(
        request,
        template,
        {
            "requests": [] if error else approvals.list_requests(states=choices[state])[:200],
            "state": state,
            "states": list(choices),
            "error": error,
        },
    )


def _find(pk: int) -> ApprovalRequest:
    try:
        return approvals.get_request(pk)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def _plan_now(found: ApprovalRequest) -> tuple[dict | None, str]:
    """While it waits, what approving would do now (lags change; mirrors come and go; producers
    stop), beside what it would have done when asked: (the plan, or None with why not)."""
    if found.state != ApprovalRequest.State.PENDING:
        return None, ""
    try:
        return with_urls(dict(live_plans.plan_now(found))), ""
    except ReplicationError as exc:
        return None, str(exc)


@require("console.view")
def approval_detail(request, pk):
    found = _find(pk)
    context = {
        "req": found,
        "at_request": with_urls(found.plan_at_request) if found.plan_at_request else None,
        "topics_shown": not OPERATIONS[found.action].takes_params,
        "reject_form": RejectForm(),
        "mine": request.user.pk == found.requester_id,
    }
    # The page's live part (its state and progress) every 2 s; the plan now, which reads both
    # clusters, on its own every 15 s.
    if request.htmx and request.GET.get("part") == "plan":
        context["now"], context["now_error"] = _plan_now(found)
        return render(request, "approvals/detail.html#plan-now", context)
    if request.htmx:
        return render(request, "approvals/detail.html#live", context)
    context["now"], context["now_error"] = _plan_now(found)
    return render(request, "approvals/detail.html", context)


def _decide(request, pk, operation, done: str, form=None):
    found = _find(pk)
    if form is not None and not form.is_valid():
        messages.error(request, form_errors(form))
    elif request.method == "POST":
        try:
            operation(audit.Actor.from_request(request), found)
        except ReplicationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, done.format(pk=found.pk))
    return redirect("approval-detail", found.pk)


@require("request.approve")
def approval_approve(request, pk):
    return _decide(request, pk, approvals.approve, "Approved request {pk}.")


@require("request.approve")
def approval_reject(request, pk):
    form = RejectForm(bound(request))
    return _decide(
        request,
        pk,
        lambda actor, found: approvals.reject(actor, found, form.cleaned_data["reason"]),
        "Rejected request {pk}.",
        form if form.is_bound else None,
    )


@require("mirror.stop")
def approval_withdraw(request, pk):
    return _decide(request, pk, approvals.withdraw, "Withdrew request {pk}.")
