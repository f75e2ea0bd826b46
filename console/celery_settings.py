"""Celery's settings that no environment variable changes: how tasks travel, the queues of
their own workers (SCENARIO_QUEUE, VERIFY_QUEUE) and the beat's schedule. `console.settings`
imports them all, so Django's settings (and Celery, through them) have them by these names;
where Celery's broker is comes from the environment there (REDIS_URL)."""

from datetime import timedelta

CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXPIRES = timedelta(hours=1)
# Scenario runs take minutes: they go to a worker of their own (`make demo` starts one), so
# the supervision and syncs that scenarios wait on are never queued behind them.
SCENARIO_QUEUE = "scenarios"
# Comparing mirrors with their sources reads records for seconds at a time: a worker of its own,
# so the supervision and syncs never wait behind it.
VERIFY_QUEUE = "verification"
CELERY_TASK_ROUTES = {
    "replication.tasks.run_scenario": {"queue": SCENARIO_QUEUE},
    "replication.tasks.run_drill": {"queue": SCENARIO_QUEUE},
    "replication.tasks.verify_mirrors": {"queue": VERIFY_QUEUE},
    "replication.tasks.verify_mirror": {"queue": VERIFY_QUEUE},
}
# Every beat sends the schedule only while it holds the deployment's lease in Redis, so two or
# more (one per host) make one active beat and its standbys (replication/engine/beat.py).
CELERY_BEAT_SCHEDULER = "replication.engine.beat:LeasedScheduler"
CELERY_BEAT_SCHEDULE = {
    "refresh-clusters": {
        "task": "replication.tasks.refresh_clusters",
        "schedule": timedelta(seconds=30),
    },
    # How each cluster's schema registry answers, for the cluster pages (which never ask it).
    "refresh-schema-registries": {
        "task": "replication.tasks.refresh_schema_registries",
        "schedule": timedelta(seconds=30),
        "options": {"expires": 25},
    },
    # Start, watch and stop the links' streams.
    "supervise-streams": {
        "task": "replication.tasks.supervise_streams",
        "schedule": timedelta(seconds=2),
        "options": {"expires": 5},
    },
    # Every mirror's lag, read from both clusters (the one source the pages and /metrics show).
    "sample-lags": {
        "task": "replication.tasks.sample_lags",
        "schedule": timedelta(seconds=10),  # replication.observe.history.SAMPLE_S
        "options": {"expires": 5},
    },
    # Every following mirror compared a window further with its source, record by record.
    "verify-mirrors": {
        "task": "replication.tasks.verify_mirrors",
        "schedule": timedelta(seconds=30),  # replication.observe.verification_sweep.ROUND_S
        "options": {"expires": 25},
    },
    # Approval requests that expired or went stale end (request_runs.settle_all_due).
    "expire-requests": {
        "task": "replication.tasks.expire_requests",
        "schedule": timedelta(seconds=60),
    },
    # Each link's syncers run at the link's own intervals; this only looks for due work.
    "sync-links": {
        "task": "replication.tasks.sync_links",
        "schedule": timedelta(seconds=1),
        "options": {"expires": 5},
    },
    # The links' DR drills whose schedule is due start (each then runs on the scenario queue).
    "start-due-drills": {
        "task": "replication.tasks.start_due_drills",
        "schedule": timedelta(seconds=60),
        "options": {"expires": 55},
    },
}
