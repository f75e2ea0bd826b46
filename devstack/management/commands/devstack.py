from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test import override_settings

from devstack import hosts
from devstack.stack import Stack, StackError
from infra.processes import PortInUse
from replication.engine import process, status, supervise


class Command(BaseCommand):
    help = (
        "Start, stop or inspect the embedded stack: two Kafka clusters, Redis, Celery, web, "
        "and with ISTHMUS_DB=postgres a PostgreSQL. With ISTHMUS_DEVSTACK_HOSTS=2, "
        "'kill-host host-a' kills one of the two hosts whole (kill -9 of its process group)."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["up", "down", "status", "logs", "kill-host"])
        parser.add_argument("parts", nargs="*", help="limit to these parts (default: all)")
        parser.add_argument("-n", "--lines", type=int, default=50, help="log lines to show")

    def handle(self, action, parts, lines, **options):
        stack = Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)
        try:
            if action == "up":
                stack.up(parts, echo=self.stdout.write)
            elif action == "down":
                if not parts:
                    # The workers and the beat first (their supervision would start the engine
                    # again), then the engine (it writes to the clusters and Redis), then the rest.
                    celery = [c.name for c in stack.components if c.celery]
                    stack.down(celery, echo=self.stdout.write)
                    for folder in self._engine_folders(stack):
                        with override_settings(STREAM_DIR=folder):
                            pid = supervise.stop_engine()
                        if pid is not None:
                            self.stdout.write(f"stopped the engine (pid {pid})")
                stack.down(parts, echo=self.stdout.write)
                self.stdout.write("devstack is down.")
            elif action == "kill-host":
                self._kill_host(stack, parts)
            elif action == "status":
                self._status(stack, parts)
            else:
                for part in stack.select(parts):
                    self.stdout.write(f"==> {stack.logfile(part.name)} <==")
                    self.stdout.write(stack.log_tail(part.name, lines))
        except (StackError, PortInUse) as exc:
            raise CommandError(str(exc)) from exc

    def _engine_folders(self, stack: Stack) -> list[Path]:
        """Where each host keeps the engine it may run."""
        if hosts.in_use(stack):
            return [host.stream_dir(settings.VAR_DIR) for host in hosts.HOSTS]
        return [settings.STREAM_DIR]

    def _kill_host(self, stack: Stack, parts: list[str]) -> None:
        names = ", ".join(host.name for host in hosts.HOSTS)
        if settings.DEVSTACK_HOSTS != 2:
            raise CommandError("kill-host needs the two hosts: ISTHMUS_DEVSTACK_HOSTS=2")
        if len(parts) != 1:
            raise CommandError(f"Name the host to kill: one of {names}")
        try:
            group = hosts.kill_host(stack, parts[0])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except ProcessLookupError as exc:
            raise CommandError(f"{exc}; 'python manage.py devstack up' starts it") from exc
        self.stdout.write(
            f"killed host {parts[0]} (kill -9 of process group {group}); "
            "'python manage.py devstack up' brings it back"
        )

    def _status(self, stack: Stack, parts: list[str]) -> None:
        rows = stack.status(parts)
        self.stdout.write(f"{'PART':<20} {'STATE':<10} {'PID':>8}  ADDRESS")
        for row in rows:
            pid = str(row.pid) if row.pid else "-"
            self.stdout.write(f"{row.name:<20} {row.state:<10} {pid:>8}  {row.address}")
        if not parts:
            engine = status.engine_status()
            pid = str(engine.pid) if engine.pid else "-"
            where = f"{engine.links} link(s), log {process.log_file()}"
            self.stdout.write(f"{'engine':<20} {engine.state.lower():<10} {pid:>8}  {where}")
        if any(row.state != "healthy" for row in rows):
            raise CommandError("Some parts are not healthy.")
