from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devstack.stack import Stack, StackError
from infra.processes import PortInUse
from replication.engine import process, status, supervise


class Command(BaseCommand):
    help = (
        "Start, stop or inspect the embedded stack: two Kafka clusters, Redis, Celery, web, "
        "and with ISTHMUS_DB=postgres a PostgreSQL."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["up", "down", "status", "logs"])
        parser.add_argument("parts", nargs="*", help="limit to these parts (default: all)")
        parser.add_argument("-n", "--lines", type=int, default=50, help="log lines to show")

    def handle(self, action, parts, lines, **options):
        stack = Stack(settings.VAR_DIR, postgres=settings.DEVSTACK_POSTGRES)
        try:
            if action == "up":
                stack.up(parts, echo=self.stdout.write)
            elif action == "down":
                if not parts:  # the engine first: it writes to the clusters and Redis
                    pid = supervise.stop_engine()
                    if pid is not None:
                        self.stdout.write(f"stopped the engine (pid {pid})")
                stack.down(parts, echo=self.stdout.write)
                self.stdout.write("devstack is down.")
            elif action == "status":
                self._status(stack, parts)
            else:
                for part in stack.select(parts):
                    self.stdout.write(f"==> {stack.logfile(part.name)} <==")
                    self.stdout.write(stack.log_tail(part.name, lines))
        except (StackError, PortInUse) as exc:
            raise CommandError(str(exc)) from exc

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
