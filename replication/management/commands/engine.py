"""`manage.py engine`: keep this network zone's engine (ISTHMUS_ENGINE_NAME) on this host. It
starts the engine (at once, or with its first link under ISTHMUS_ENGINE_LAZY), restarts it when
it dies or hangs, and stops it on SIGTERM or Ctrl-C; meanwhile it answers the console's calls to
the zone's clusters (`replication/kafka/zone_service.py`). Run it on a host of the zone whose
clusters are registered with that engine name: it needs the console's database, Redis and keys,
and reaches the zone's clusters; nothing connects to it (docs/deployment.md)."""

from __future__ import annotations

import logging
import signal
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from replication.engine import beat, process, supervise
from replication.kafka import zone_service

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = __doc__.split("\n")[0]

    def handle(self, *args, **options) -> None:
        name = settings.ENGINE_NAME
        if not name:
            raise CommandError(
                "Set ISTHMUS_ENGINE_NAME to the engine this host keeps (the name its zone's "
                "clusters are registered with); the console's own engine is kept by its Celery "
                "beat and workers."
            )
        stopping = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopping.set())
        # The console's calls to the zone's clusters, answered here (zone_service.py).
        serving = threading.Thread(
            target=zone_service.serve, args=(name, stopping), name="zone-calls", daemon=True
        )
        serving.start()
        self.stdout.write(
            f"Keeping engine {name} (id {process.engine_id()}) on host {settings.HOST_NAME}, "
            f"and answering the console's calls to the zone's clusters; its log: "
            f"{process.log_file()}. Stop with Ctrl-C."
        )
        said = 0.0
        while True:
            try:
                supervise.watch_engine()
            except Exception:  # Redis or the database away: the next round tries again
                if time.monotonic() - said > 60:
                    said = time.monotonic()
                    log.warning("Could not look at engine %s", name, exc_info=True)
            finally:
                close_old_connections()
            if stopping.wait(beat.WATCH_S):
                break
        serving.join(timeout=5)
        pid = supervise.stop_engine()
        self.stdout.write(
            f"Stopped engine {name} (pid {pid})." if pid else f"Engine {name} was not running."
        )
