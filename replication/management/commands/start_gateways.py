"""`manage.py start_gateways`: start every defined gateway's proxy that does not run on this
host. The gateways' host (the compose file's `gateway` service) runs it before its worker, so
a host started again serves its gateways again; a database not migrated yet has none."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from replication.kafka import gateways


class Command(BaseCommand):
    help = __doc__.split("\n")[0]

    def handle(self, *args, **options):
        try:
            said = gateways.start_stopped_here()
        except DatabaseError:
            said = ["No gateways yet: the database has no table for them (not migrated)."]
        for line in said:
            self.stdout.write(line)
