"""`manage.py promote_standby --reason "..."`: make this standby region's database the primary,
when the primary's region is lost (docs/deployment.md, "A standby region"). Refused while the
primary still answers, unless --force; recorded in the audit trail."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from replication.core.errors import ReplicationError
from replication.engine import standby
from replication.governance import audit


class Command(BaseCommand):
    help = __doc__.split("\n")[0]

    def add_arguments(self, parser):
        parser.add_argument(
            "--reason", default="", help="why, for the audit trail (required)", required=True
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="promote even though the primary still answers (two primaries: say why)",
        )

    def handle(self, *args, reason: str, force: bool, **options):
        actor = audit.Actor(
            name=f"{standby.os_user() or 'someone'} on host {settings.HOST_NAME} "
            "(manage.py promote_standby)"[:150]
        )
        try:
            promotion = standby.promote(actor, reason, force=force)
        except ReplicationError as exc:
            raise CommandError(str(exc)) from exc
        for line in standby.next_steps(promotion):
            self.stdout.write(line)
