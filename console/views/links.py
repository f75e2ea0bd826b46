"""Cluster link pages: list, create, detail with configs and mirrors, pause / resume / delete."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from console.access import require
from console.charts import RANGE_WORDS, chart
from console.forms.filters import filter_editors
from console.forms.links import LinkConfigForm, LinkForm
from console.views.actions import bound, confirm
from console.views.clusters import find_cluster
from replication.core.errors import FieldProblems, ReplicationError
from replication.cutover import mirror_actions
from replication.engine import publish
from replication.engine import status as stream_status
from replication.governance import audit
from replication.kafka.clusters import probe_cluster
from replication.models import ClusterLink, KafkaCluster, MirrorTopic
from replication.observe import history, lag, lag_times
from replication.overview import dashboard
from replication.overview.unreachable import survey
from replication.schemas import schema_links
from replication.sync import acl_sync, auto_mirrors, syncers
from replication.topics import link_creation, links, offset_sync


def find_link(destination: str, name: str) -> ClusterLink:
    cluster = find_cluster(destination)
    try:
        return links.get_link(cluster, name)
    except ReplicationError as exc:
        raise Http404(str(exc)) from exc


def with_source_names(found):
    """Name each link's source where it is a registered cluster."""
    names = dict(KafkaCluster.objects.values_list("cluster_id", "name"))
    for link in found:
        link.source_name = names.get(link.source_cluster_id, "")
    return found


def with_lags(found) -> list[MirrorTopic]:
    """Each mirror with its latest lag reading (`lag_reading`, None if not read yet)."""
    found = list(found)
    lags = dashboard.mirror_lags(found)
    for mirror in found:
        mirror.lag_reading = lags.get(mirror.pk)
    return found


def with_standings(found) -> list[MirrorTopic]:
    """Each mirror with what it offers now and where it stands (`standing`)."""
    found = list(found)
    standings = mirror_actions.standings(found)
    for mirror in found:
        mirror.standing = standings[mirror.pk]
    return found


def _mirrors_of(link: ClusterLink) -> list[MirrorTopic]:
    return with_standings(with_lags(link.mirrors.select_related("link", "destination")))


@require("console.view")
def link_list(request):
    summaries = dashboard.link_summaries(with_source_names(list(links.list_links())))
    return render(request, "links/list.html", {"summaries": summaries})


@require("link.manage")
def link_create(request):
    form = LinkForm(bound(request))
    if request.method == "POST" and form.is_valid():
        try:
            link, made = link_creation.create_or_join(
                audit.Actor.from_request(request),
                form.cleaned_data["destination"],
                form.cleaned_data["name"],
                form.cleaned_data["configs"],
                source=form.cleaned_data["source"],
            )
        except FieldProblems as exc:  # each under its field, all at once
            for field, problem in exc.problems.items():
                form.add_error(field, problem)
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            if made:
                messages.success(request, f"Created cluster link {link.name}.")
            else:
                messages.info(request, link_creation.joined_words(link))
            return redirect("link-detail", link.destination.name, link.name)
    return render(request, "links/form.html", {"form": form})


@require("console.view")
def link_detail(request, destination, name):
    return _detail(request, find_link(destination, name), LinkConfigForm())


def _detail(request, link: ClusterLink, config_form: LinkConfigForm, status: int = 200):
    link = with_source_names([link])[0]
    peer = links.other_half(link)
    return render(
        request,
        "links/detail.html",
        {
            "link": link,
            "configs": links.describe_link_configs(link),
            "mirrors": _mirrors_of(link),
            "flows": link.flows.select_related("destination"),
            "destination_health": probe_cluster(link.destination),
            "unreachable": survey([link]).marks[link.pk],
            "stream": stream_status.status(link),
            "copy_path": publish.copy_path(link),
            "pending_requests": link.approval_requests.filter(state="PENDING"),
            "config_form": config_form,
            "filter_editors": filter_editors(link),
            "sync": offset_sync.status(link),
            "bidirectional": link.config("link.mode") == "BIDIRECTIONAL",
            # A bidirectional link is one object: its other half's mirrors and flows too.
            "peer": peer,
            "peer_mirrors": _mirrors_of(peer) if peer else [],
            "peer_flows": peer.flows.select_related("destination") if peer else [],
            **link_charts_context(request, link),
            "syncs": {
                "acl_enabled": acl_sync.enabled(link),
                "acl_interval_ms": link.int_config("acl.sync.ms"),
                "acl_problem": link.sync_problems.get(syncers.ACLS, ""),
                "auto_enabled": auto_mirrors.enabled(link),
                "auto_problem": link.sync_problems.get(syncers.AUTO_CREATE, ""),
                "schemas": schema_links.status(link),
            },
        },
        status=status,
    )


@require("link.manage")
def link_configs_alter(request, destination, name):
    link = find_link(destination, name)
    if request.method != "POST":  # the form is on the link's page
        return redirect("link-detail", destination, name)
    form = LinkConfigForm(request.POST)
    if form.is_valid():
        to_set, to_reset = form.cleaned_data["set"], form.names_to_reset()
        try:
            links.alter_link_configs(audit.Actor.from_request(request), link, to_set, to_reset)
        except ReplicationError as exc:
            form.add_error(None, str(exc))
        else:
            changed = [*to_set, *(f"{n} reset" for n in to_reset)]
            messages.success(
                request, f"Changed the configs of link {link.name}: {', '.join(changed)}."
            )
            return redirect("link-detail", destination, name)
    # The page again, with what was typed and what is wrong with it beside the form.
    return _detail(request, link, form, status=400)


@require("link.manage")
def link_pause(request, destination, name):
    link = find_link(destination, name)
    return confirm(
        request,
        question=f"Pause cluster link {link.name}?",
        verb="pause",
        explanation="Every mirror of the link stops fetching and shows LINK_PAUSED. "
        "The mirrors stay read-only.",
        run=lambda actor: links.pause_link(actor, link),
        done=f"Paused cluster link {link.name}.",
        back_url=link_url(link),
    )


@require("link.manage")
def link_resume(request, destination, name):
    link = find_link(destination, name)
    return confirm(
        request,
        question=f"Resume cluster link {link.name}?",
        verb="resume",
        explanation="Its mirrors fetch again, except those paused on their own. A failed "
        "link's stream starts afresh.",
        run=lambda actor: links.resume_link(actor, link),
        done=f"Resumed cluster link {link.name}.",
        back_url=link_url(link),
    )


def link_url(link: ClusterLink) -> str:
    return reverse("link-detail", args=[link.destination.name, link.name])


@require("console.view")
def link_charts(request, destination, name):
    """The link's throughput and lag over the range chosen (the page polls this)."""
    link = find_link(destination, name)
    # The refresh also brings the stream's state, further up the page (out of band).
    context = {
        **link_charts_context(request, link),
        "stream": stream_status.status(link),
        "oob": True,
    }
    return render(request, "_charts.html", context)


def chart_range(request) -> str:
    """The charts' range: the one just chosen (kept in the session for every chart), else the
    one chosen before."""
    chosen = request.GET.get("range")
    if chosen in history.RANGES:
        request.session["chart_range"] = chosen
        return chosen
    return request.session.get("chart_range", history.DEFAULT_RANGE)


def link_charts_context(request, link) -> dict:
    shown = chart_range(request)
    series = history.link_series(link, shown)
    readings = lag.latest(link).values()
    if readings:  # now: the mirrors' latest readings, as the lists and the overview show them
        at = max(r.at for r in readings)
        series["lag"].append(history.Sample(at, sum(r.total for r in readings)))
        if (worst := lag_times.largest(r.max_lag_ms for r in readings)) >= 0:
            series["max_lag_s"].append(history.Sample(at, worst / 1000))
    return {
        "charts_url": reverse("link-charts", args=[link.destination.name, link.name]),
        "charts_poll": True,
        "charts": [
            chart("Copied", "records/s", series["records_per_sec"], shown),
            chart("Lag", "records", series["lag"], shown),
            chart("Lag in time", "seconds", series["max_lag_s"], shown),
        ],
        "chart_ranges": RANGE_WORDS.items(),
        "shown": shown,
    }
