from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from console.access import can, public
from replication.core.redis_channel import ping as redis_ping
from replication.engine import beat, status
from replication.kafka.clusters import probe_clusters


@public
@require_GET
def healthz(request):
    """Database, Redis and every registered cluster; 503 when the console itself cannot work.

    Anyone (a load balancer, a monitor) sees what is up; error details are for signed-in users.
    """
    detailed = can(request.user, "console.view")
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = {"ok": True}
    except Exception as exc:  # reported, not raised
        checks["database"] = {"ok": False, "error": str(exc)}
    checks["redis"] = redis_ping()
    # Which host's beat sends the schedule and where the engine runs: what an operator of
    # several hosts looks for first (neither makes the console itself unavailable).
    checks["beat"] = beat.health()
    checks["engine"] = status.engine_health()
    clusters = {}
    if checks["database"]["ok"]:
        for health in probe_clusters():
            report = health.as_dict()
            clusters[health.cluster.name] = (
                report if detailed else {"ok": report["ok"], "cluster_id": report["cluster_id"]}
            )
    ok = checks["database"]["ok"] and checks["redis"]["ok"]
    if not detailed:
        checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
    body = {"status": "ok" if ok else "unavailable", **checks, "clusters": clusters}
    return JsonResponse(body, status=200 if ok else 503)
