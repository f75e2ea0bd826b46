import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from devstack import kafka
from replication import audit
from replication.clusters import register_cluster
from replication.errors import ReplicationError
from replication.models import KafkaCluster


class Command(BaseCommand):
    help = (
        "Register the embedded clusters as 'source' and 'destination' and create the first "
        "admin user. Safe to run again."
    )

    def add_arguments(self, parser):
        for node in kafka.NODES:
            parser.add_argument(
                f"--{node.name}-bootstrap",
                default=node.sasl_bootstrap,
                help=f"SASL address of the {node.name} cluster (default {node.sasl_bootstrap})",
            )

    def handle(self, **options):
        actor = audit.Actor.system("setup_demo")
        for node in kafka.NODES:
            config = kafka.sasl_client_config(
                node, settings.VAR_DIR, user="admin", bootstrap=options[f"{node.name}_bootstrap"]
            )
            bootstrap = config.pop("bootstrap.servers")
            existing = KafkaCluster.objects.filter(name=node.name).first()
            if existing:
                self.stdout.write(
                    f"cluster {node.name} already registered (id {existing.cluster_id})"
                )
                continue
            try:
                cluster = register_cluster(actor, node.name, bootstrap, config)
            except ReplicationError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"registered cluster {cluster.name} (id {cluster.cluster_id})")
        self._first_admin()

    def _first_admin(self) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            self.stdout.write(
                "An admin user exists already; its password was printed when it was made "
                "(reset it with 'python manage.py changepassword admin')."
            )
            return
        if users.objects.filter(username="admin").exists():
            raise CommandError(
                "A user named 'admin' exists but is not an admin. Make it one with "
                "'python manage.py createsuperuser' under another name, or remove it."
            )
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            user = users.objects.create_superuser("admin", "", password)
            user.groups.add(Group.objects.get(name="admin"))
            audit.record(
                audit.Actor.system("setup_demo"),
                "user.create",
                "user admin",
                after={"roles": ["admin"]},
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Created the first admin user.\n  username: admin\n  password: {password}\n"
                "  (shown once; change it with 'python manage.py changepassword admin')"
            )
        )
