"""Celery tasks: thin wrappers that load objects and call the domain functions."""

import logging

from celery import shared_task

from replication.actions import approvals, request_runs
from replication.core import redis_channel
from replication.engine import supervise
from replication.governance import audit, notifications
from replication.kafka import gateways, reachability
from replication.models import ClusterLink, DrillRun, Notification, ScenarioRun
from replication.observe import lag, verification_requests, verification_sweep
from replication.scenarios import drills, registry, runner
from replication.schemas import schema_registries
from replication.sync import syncers

log = logging.getLogger(__name__)


@shared_task
def refresh_clusters() -> dict[str, dict]:
    """Probe every registered cluster, keep whether each answers (for the overview, the link
    pages and /metrics) and log the ones that are unreachable or changed."""
    report = {}
    for health in reachability.refresh():
        if health.error:
            log.warning("Cluster %s: %s", health.cluster.name, health.error)
        report[health.cluster.name] = health.as_dict()
    return report


def _one_at_a_time(name: str, work) -> None:
    """Run `work` unless another worker is running it already."""
    with redis_channel.held(name, hold_s=120) as mine:
        if mine:
            work()


@shared_task
def sync_links() -> None:
    """Run the links' due syncers; one run at a time however many workers there are."""
    _one_at_a_time("sync-links", syncers.run_due_syncs)


@shared_task
def supervise_streams() -> None:
    """Start, restart and stop the links' streams and finish promotes and failovers whose
    streams stopped writing; one run at a time."""
    _one_at_a_time("supervise-streams", supervise.supervise_all)
    request_runs.finish_all_stops()


@shared_task
def sample_lags() -> None:
    """Read every mirror's lag from both clusters, and a point of the charts' history."""
    _one_at_a_time("sample-lags", lag.sample_all)


@shared_task
def refresh_schema_registries() -> None:
    """Read how each cluster's schema registry answers and keep it for the cluster pages;
    one run at a time."""
    _one_at_a_time("refresh-schema-registries", schema_registries.refresh_all)


@shared_task
def verify_mirrors() -> None:
    """Compare the next records of every following mirror with its source; settle the
    verifications whose worker stopped."""
    verification_requests.settle_abandoned()
    with redis_channel.lease("verify-mirrors", hold_s=30) as renew:
        if renew is not None:
            verification_sweep.sweep_all(renew=renew)


@shared_task  # both on settings.VERIFY_QUEUE
def verify_mirror(pk: int) -> None:
    """Run a verification asked for (kafka-mirrors --verify, the API, the mirror page)."""
    verification_requests.run(pk)


@shared_task(bind=True)
def finish_stops(self, link_pk: int) -> None:
    """Finish a link's promotes and failovers as soon as its stream stops writing them: checks
    twice a second, without holding the worker in between."""
    link = ClusterLink.objects.filter(pk=link_pk).first()
    if link is not None and request_runs.finish_stops(link):
        self.apply_async((link_pk,), countdown=0.5)


@shared_task
def execute_request(request_pk: int) -> None:
    """Run an approval request that got its approvals."""
    request_runs.execute(approvals.get_request(request_pk))


@shared_task
def expire_requests() -> None:
    request_runs.settle_all_due()


@shared_task  # on settings.SCENARIO_QUEUE
def run_scenario(run_pk: int, how: str, user_pk: int | None) -> None:
    """Go on with a claimed scenario run: its next step, the rest, the failed step again and
    on, or its end."""
    run = ScenarioRun.objects.get(pk=run_pk)
    actor = audit.Actor.of_user(user_pk) if user_pk else audit.Actor.system("scenario")
    runner.go_on(registry.get(run.scenario), run, how, actor)


@shared_task  # on settings.SCENARIO_QUEUE
def run_drill(run_pk: int, user_pk: int | None) -> None:
    """Run a started drill of a link, its canary failed over and back, to its end."""
    run = DrillRun.objects.select_related("link", "link__destination").get(pk=run_pk)
    actor = audit.Actor.of_user(user_pk) if user_pk else drills.SCHEDULE
    drills.execute(run, actor)


@shared_task
def start_due_drills() -> None:
    """Start the drills whose schedule is due (each then runs in `run_drill`)."""
    drills.start_due()


@shared_task(bind=True, max_retries=2)
def send_notification(self, pk: int) -> None:
    """Send a requester's notification by webhook and e-mail; twice more, 30 s apart, while
    some of it fails."""
    found = Notification.objects.filter(pk=pk).select_related("user", "request").first()
    if found is not None and not notifications.send(found):
        raise self.retry(countdown=30)


@shared_task
def gateway_proxy(operation: str, spec: dict, route_id: int | None) -> dict:
    """An operation on a gateway's proxy, run on the gateways' host (ISTHMUS_GATEWAY_QUEUE)."""
    return gateways.on_this_host(operation, spec, route_id)
