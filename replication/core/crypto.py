"""Secrets at rest: client-config values that are passwords or keys are encrypted with Fernet."""

from __future__ import annotations

import re

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

SENSITIVE_MASK = "(sensitive)"

# Kafka marks these as PASSWORD-type configs; librdkafka names follow the same words.
_SENSITIVE = re.compile(
    r"(password|secret|jaas\.config|key\.pem|keystore\.key|private\.key|token|credential)",
    re.IGNORECASE,
)


def is_sensitive(key: str) -> bool:
    return bool(_SENSITIVE.search(key))


def _fernet() -> Fernet:
    if not settings.ENCRYPTION_KEY:
        raise ImproperlyConfigured(
            "No encryption key for stored secrets: set ISTHMUS_ENCRYPTION_KEY, or run "
            "'python manage.py init_var' to generate one into var/ (make setup does)."
        )
    return Fernet(settings.ENCRYPTION_KEY.encode())


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise RuntimeError(
            "Stored secrets cannot be decrypted with the current encryption key. "
            "Restore the ISTHMUS_ENCRYPTION_KEY (or var/encryption_key) they were saved with."
        ) from exc


def split_secrets(config: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split a config into its plain part and its sensitive part, each secret encrypted."""
    plain = {k: v for k, v in config.items() if not is_sensitive(k)}
    secret = {k: encrypt(v) for k, v in config.items() if is_sensitive(k)}
    return plain, secret


def join_secrets(plain: dict[str, str], secret: dict[str, str]) -> dict[str, str]:
    """The config again, secrets decrypted (for clients only, never for display)."""
    return {**plain, **{k: decrypt(token) for k, token in secret.items()}}


def masked(plain: dict[str, str], secret: dict[str, str]) -> dict[str, str]:
    """The config as people see it: secret values replaced by the sensitive mark."""
    return {**plain, **dict.fromkeys(secret, SENSITIVE_MASK)}
