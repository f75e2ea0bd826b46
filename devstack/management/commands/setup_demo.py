import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from devstack import kafka, registry
from isthmus_cli.common import TOKEN_KEY, URL_KEY, read_properties
from replication.core.errors import ReplicationError
from replication.governance import audit
from replication.governance.tokens import authenticate, create_token, revoke_token
from replication.kafka import gateways
from replication.kafka.clusters import register_cluster, set_link_principal
from replication.models import Gateway, KafkaCluster, OneTimePassword
from replication.schemas.schema_registries import RegistryAccess, set_schema_registry

CLI_TOKEN_NAME = "make demo: command-line tools"  # noqa: S105 (a name, not a secret)
# The demo's gateway (docs/gateways.md): applications given its address follow a cutover that
# names it, from the source cluster to the destination, without a restart.
GATEWAY_NAME = "apps"


class Command(BaseCommand):
    help = (
        "Register the embedded clusters as 'source' and 'destination' (each with its schema "
        "registry) and create the first admin user. Safe to run again."
    )

    def add_arguments(self, parser):
        for node in kafka.NODES:
            parser.add_argument(
                f"--{node.name}-bootstrap",
                default=node.sasl_bootstrap,
                help=f"SASL address of the {node.name} cluster (default {node.sasl_bootstrap})",
            )
        for each in registry.REGISTRIES:
            parser.add_argument(
                f"--{each.cluster}-registry",
                default=each.url,
                help=f"URL of the {each.cluster} cluster's schema registry (default {each.url})",
            )
        parser.add_argument(
            "--gateway-address",
            default=f"127.0.0.1:{kafka.port(9400)}",
            help=f"where the demo's gateway, {GATEWAY_NAME!r}, takes clients (routing to source)",
        )
        parser.add_argument(
            "--console-url",
            default="http://127.0.0.1:8000",
            help="where the command-line tools reach the console",
        )
        parser.add_argument(
            "--cli-config",
            type=Path,
            help="the file the command-line tools read (default var/cli.properties)",
        )

    def handle(self, **options):
        actor = audit.Actor.system("setup_demo")
        for node in kafka.NODES:
            config = kafka.sasl_client_config(
                node, settings.VAR_DIR, user="admin", bootstrap=options[f"{node.name}_bootstrap"]
            )
            bootstrap = config.pop("bootstrap.servers")
            # Links from it read as `replicator`, which may only read, not as the super-user.
            link_config = kafka.link_credentials(node, settings.VAR_DIR)
            schemas = RegistryAccess(options[f"{node.name}_registry"])
            existing = KafkaCluster.objects.filter(name=node.name).first()
            try:
                if existing:
                    self.stdout.write(
                        f"cluster {node.name} already registered (id {existing.cluster_id})"
                    )
                    if not existing.link_principal:  # registered before links had their own
                        set_link_principal(actor, existing, link_config)
                    if not existing.schema_registry_url:  # registered before the registries
                        set_schema_registry(actor, existing, schemas)
                    continue
                cluster = register_cluster(
                    actor, node.name, bootstrap, config, link_config, schemas
                )
            except ReplicationError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"registered cluster {cluster.name} (id {cluster.cluster_id})")
        self._gateway(actor, options["gateway_address"])
        self._first_admin()
        self._cli_config(
            options["cli_config"] or Path(settings.VAR_DIR) / "cli.properties",
            options["console_url"],
        )

    def _gateway(self, actor: audit.Actor, address: str) -> None:
        """The demo's gateway, routing to source; the demo goes on without it, saying why,
        where it cannot start (its ports taken, say)."""
        found = Gateway.objects.filter(name=GATEWAY_NAME).first()
        if found:
            self.stdout.write(f"gateway {GATEWAY_NAME} already defined, at {found.address}")
            return
        clusters = list(KafkaCluster.objects.filter(name__in=[n.name for n in kafka.NODES]))
        source = next(c for c in clusters if c.name == kafka.SOURCE.name)
        try:
            gateways.define(actor, GATEWAY_NAME, address, clusters, source)
        except ReplicationError as exc:
            self.stdout.write(self.style.WARNING(f"No demo gateway: {exc}"))
            return
        self.stdout.write(
            f"defined gateway {GATEWAY_NAME} at {address}, routing to {source.name}: give "
            "applications this address, and a cutover that names the gateway moves them"
        )

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
            # The roles' groups come with a migration; a database flushed since has none.
            user.groups.add(Group.objects.get_or_create(name="admin")[0])
            OneTimePassword.objects.create(user=user)  # they choose their own at first sign-in
            audit.record(
                audit.Actor.system("setup_demo"),
                "user.create",
                "user admin",
                after={"roles": ["admin"]},
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Created the first admin user.\n  username: admin\n  password: {password}\n"
                "  (shown once, and for the first sign-in only: the console asks for your own)"
            )
        )

    def _cli_config(self, path: Path, url: str) -> None:
        """Give the command-line tools the admin's API token, in an owner-only file."""
        if path.is_file():
            token = read_properties(path).get(TOKEN_KEY, "")
            if authenticate(token):
                self.stdout.write(f"The command-line tools use {path}.")
                return
        admin = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
        assert admin is not None  # made by this command's first step
        actor = audit.Actor.system("setup_demo")
        for stale in admin.api_tokens.filter(name=CLI_TOKEN_NAME):
            revoke_token(actor, stale)
        _, secret = create_token(actor, admin, CLI_TOKEN_NAME)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        # Created owner-only, so the token is never readable by others, even for a moment.
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(f"{URL_KEY}={url}\n{TOKEN_KEY}={secret}\n")
        self.stdout.write(
            f"Wrote {path}: the command-line tools in bin/ act as {admin.get_username()}."
        )
