"""Make the console's local state: var/ (owner-only), the keys it signs and encrypts with, the
devstack PostgreSQL's password and the static root. Idempotent: what exists is kept (a new
encryption key would make every stored secret unreadable). `make setup` runs it; importing the
settings writes nothing."""

from __future__ import annotations

import os
import secrets

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management.base import BaseCommand
from django.core.management.utils import get_random_secret_key

from infra.secretfile import read_or_create

# Each key's file in var/, the variable that overrides it (then no file is made), its maker.
KEYS = [
    ("secret_key", "SECRET_KEY", get_random_secret_key),
    ("encryption_key", "ISTHMUS_ENCRYPTION_KEY", lambda: Fernet.generate_key().decode()),
    ("postgres_password", None, lambda: secrets.token_hex(24)),
]


class Command(BaseCommand):
    help = "Make var/ (owner-only) with the console's keys, and the static root; keeps what exists."
    requires_system_checks: list[str] = []

    def handle(self, *args, **options) -> None:
        var = settings.VAR_DIR
        var.mkdir(parents=True, exist_ok=True)
        # Owner-only: it holds the database, keys and cluster credentials. A group's right to
        # pass through (not to list) is kept: the devstack's PostgreSQL, run by root as the
        # `postgres` user, reaches its data directory in var/ that way (devstack/postgres.py).
        var.chmod(0o700 | (var.stat().st_mode & 0o010))
        for name, variable, make in KEYS:
            if not (variable and os.environ.get(variable)):
                read_or_create(var / name, make)
        settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
        if options["verbosity"]:
            self.stdout.write(f"{var} holds the console's keys and state.")
