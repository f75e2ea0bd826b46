"""Mirror topic pages: list, create under a link, detail with the live partition table,
pause / resume / delete."""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.charts import RANGE_WORDS, chart
from console.forms.mirrors import MirrorForm
from console.views.actions import bound, confirm
from console.views.clusters import find_cluster
from console.views.links import chart_range, find_link, link_url, with_lags
from infra.kafka_errors import KafkaAdminError
from replication.actions import bulk
from replication.core.errors import ReplicationError
from replication.cutover import mirror_actions
from replication.engine import status as stream_status
from replication.governance import audit
from replication.models import MirrorTopic
from replication.observe import (
    history,
    lag,
    mirror_differences,
    verification_requests,
    verification_sweep,
)
from replication.topics import mirrors, offset_sync


def find_mirror(destination: str, topic: str) -> MirrorTopic:
    cluster = find_cluster(destination)
    try:
        return mirrors.get_mirror(cluster, topic)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def mirror_url(mirror: MirrorTopic) -> str:
    return reverse("mirror-detail", args=[mirror.destination.name, mirror.mirror_topic])


PAGE_SIZE = 100


@require("console.view")
def mirror_list(request):
    state = request.GET.get("state") or None
    search = (request.GET.get("q") or "").strip()
    states = MirrorTopic.State.values
    # An unknown state (a typo, a stale bookmark) is said, not shown as "no mirrors".
    error = ""
    if state is not None and state not in states:
        error = (
            f"There is no mirror state {state[:50]!r}; choose all or one of {', '.join(states)}."
        )
    elif len(search) > 249 or "\n" in search:
        error = "A topic name is one line of at most 249 characters: search for part of one."
    found = mirrors.list_mirrors(states=[state] if state else None)
    if search and not error:
        found = found.filter(Q(mirror_topic__icontains=search) | Q(source_topic__icontains=search))
    page = Paginator([] if error else found, PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = with_lags(page.object_list)
    return render(
        request,
        "mirrors/list.html",
        {
            "mirrors": page.object_list,
            "page": page,
            "state": state,
            "search": search,
            "states": states,
            "error": error,
            "query": urlencode({k: v for k, v in (("state", state), ("q", search)) if v}),
        },
    )


@require("mirror.manage")
def mirror_create(request, destination, name):
    link = find_link(destination, name)
    form = MirrorForm(bound(request))
    if request.method == "POST" and form.is_valid():
        created, failed = _create_mirrors(request, link, form)
        if created and not failed:
            return redirect(mirror_url(created[0]) if len(created) == 1 else link_url(link))
        if created:  # the form again, with the topics that failed and why
            form.data = form.data.copy()
            form.data["source_topic"] = ", ".join(failed)
    try:  # a searchable list of the source's topics, when it answers
        choices, choices_error = mirrors.mirrorable_topics(link), ""
    except (KafkaAdminError, ReplicationError) as exc:
        choices, choices_error = [], str(exc)
    form.fields["source_topic"].widget.attrs["list"] = "source-topics"
    return render(
        request,
        "mirrors/form.html",
        {"form": form, "link": link, "choices": choices, "choices_error": choices_error},
    )


def _create_mirrors(request, link, form: MirrorForm) -> tuple[list[MirrorTopic], list[str]]:
    """A mirror of each named topic, each on its own: one refused does not stop the others.
    Returns those made and the names refused (each refusal on the form)."""
    created, failed = [], []
    for name in form.cleaned_data["source_topic"]:
        try:
            created.append(
                mirrors.create_mirror(
                    audit.Actor.from_request(request),
                    link,
                    name,
                    replication_factor=form.cleaned_data["replication_factor"],
                    configs=form.cleaned_data["configs"],
                )
            )
        except ReplicationError as exc:
            failed.append(name)
            form.add_error(
                None, str(exc) if len(form.cleaned_data["source_topic"]) == 1 else f"{name}: {exc}"
            )
    if created:
        made = ", ".join(m.mirror_topic for m in created)
        messages.success(request, f"Created mirror topic{'s' * (len(created) > 1)} {made}.")
    return created, failed


@require("console.view")
def mirror_detail(request, destination, topic):
    mirror = find_mirror(destination, topic)
    template = "mirrors/detail.html#partitions" if request.htmx else "mirrors/detail.html"
    status = lag.describe_mirror(mirror)
    verified = verification_sweep.verified(mirror)
    pending = [
        r
        for r in mirror.link.approval_requests.filter(state="PENDING")
        if mirror.mirror_topic in r.topics
    ]
    return render(
        request,
        template,
        {
            "mirror": mirror,
            "status": status,
            # Only the actions that can run now are offered; the others say why not.
            "standing": None if request.htmx else mirror_actions.standing(mirror),
            "pending_requests": [] if request.htmx else pending,
            "sync": offset_sync.status(mirror.link, mirror.mirror_topic),
            "source_missing": mirrors.source_missing(mirror),
            "records_lost": mirrors.records_lost(mirror),
            "differences": mirror_differences.differences(mirror),
            "verified": verification_sweep.summary(mirror),
            "partition_rows": [
                (p, verified[p.partition][1] if p.partition in verified else None)
                for p in status.partitions
            ],
            "verifications": []
            if request.htmx
            else [(v, verification_requests.outcome(v)) for v in mirror.verifications.all()[:5]],
            "not_copying_yet": stream_status.not_copying_yet(
                mirror.link, stream_status.status(mirror.link)
            ),
            # A refresh also brings the heading's state badge (out of band).
            "oob": bool(request.htmx),
            # The charts end at the reading the table shows; a refresh brings them out of band.
            **mirror_charts_context(request, mirror, lag.reading(status)),
        },
    )


@require("mirror.manage")
def mirror_pause(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return confirm(
        request,
        question=f"Pause mirror topic {mirror.mirror_topic}?",
        verb="pause",
        explanation="It stops fetching from its source and stays read-only until resumed.",
        run=lambda actor: mirrors.pause_mirror(actor, mirror),
        done=f"Paused mirror topic {mirror.mirror_topic}.",
        back_url=mirror_url(mirror),
    )


@require("mirror.manage")
def mirror_resume(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return confirm(
        request,
        question=f"Resume mirror topic {mirror.mirror_topic}?",
        verb="resume",
        explanation="It fetches from its source again.",
        run=lambda actor: mirrors.resume_mirror(actor, mirror),
        done=f"Resumed mirror topic {mirror.mirror_topic}.",
        back_url=mirror_url(mirror),
    )


@require("mirror.delete")
def mirror_delete(request, destination, topic):
    mirror = find_mirror(destination, topic)
    return confirm(
        request,
        question=f"Delete mirror topic {mirror.mirror_topic}?",
        verb="delete",
        explanation=f"The topic and all its data are deleted from {mirror.destination.name}. "
        "The source topic is not touched.",
        run=lambda actor: mirrors.delete_mirror(actor, mirror),
        done=f"Deleted mirror topic {mirror.mirror_topic}.",
        back_url=mirror_url(mirror),
        after_url=link_url(mirror.link),
        typed=mirror.mirror_topic,
    )


@require("console.view")
def mirror_charts(request, destination, topic):
    """The mirror's lag over the range chosen (its partitions' refresh brings them too)."""
    mirror = find_mirror(destination, topic)
    return render(
        request, "_charts.html", mirror_charts_context(request, mirror, lag.latest_of(mirror))
    )


def mirror_charts_context(request, mirror: MirrorTopic, now: lag.Reading | None) -> dict:
    """The charts end at `now`, the reading the partitions' table shows (not stored in the
    history: that is sampled at a steady pace)."""
    shown = chart_range(request)
    series = history.mirror_series(mirror, shown)
    if now is not None and (largest := now.largest) is not None:
        series["lag"].append(history.Sample(now.at, now.total))
        series["max_lag"].append(history.Sample(now.at, largest[0]))
        if now.max_lag_ms >= 0:
            series["max_lag_s"].append(history.Sample(now.at, now.max_lag_ms / 1000))
    return {
        "charts_url": reverse("mirror-charts", args=[mirror.destination.name, mirror.mirror_topic]),
        "charts": [
            chart("Lag", "records", series["lag"], shown),
            chart("Largest partition lag", "records", series["max_lag"], shown),
            chart("Lag in time", "seconds", series["max_lag_s"], shown),
        ],
        "chart_ranges": RANGE_WORDS.items(),
        "shown": shown,
    }


def chosen(request, link) -> list[str]:
    """The mirror topics of `link` a bulk action's form chose: those matching its pattern when
    it has one, else those ticked."""
    data = request.POST if request.method == "POST" else request.GET
    pattern = data.get("pattern", "").strip()
    return bulk.select(link, None if pattern else data.getlist("topics"), pattern or None)


def listed(names: list[str], most: int = 20) -> str:
    """ "a, b, c" (and "and N more" past `most`)."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


@require("mirror.manage")
def link_mirrors_switch(request, destination, name, action):
    """Pause or resume the chosen mirror topics of a link at once (POST), each on its own."""
    link = find_link(destination, name)
    if action not in bulk.SWITCHES:
        raise Http404(f"Mirror topics are paused or resumed; not {action[:50]!r}.")
    back = link_url(link) + "#mirrors"
    if request.method != "POST":  # the buttons are on the link's page
        return redirect(back)
    try:
        names = chosen(request, link)
    except ReplicationError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    outcomes = bulk.switch(audit.Actor.from_request(request), link, names, action)
    done = [n for n, outcome in outcomes if not isinstance(outcome, ReplicationError)]
    for name, outcome in outcomes:
        if isinstance(outcome, ReplicationError):
            messages.error(request, f"{name}: {outcome}")
    if done:
        verb = "Paused" if action == "pause" else "Resumed"
        count = f"{len(done)} mirror topic{'s' if len(done) != 1 else ''}"
        messages.success(request, f"{verb} {count}: {listed(done)}.")
    return redirect(back)
