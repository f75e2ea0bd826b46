"""Start-up checks: a console without its keys says how to make them, before any request."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

# Each key's setting, the variable that gives it and its file in var/ (settings.py).
KEYS = [
    ("SECRET_KEY", "SECRET_KEY", "secret_key"),
    ("ENCRYPTION_KEY", "ISTHMUS_ENCRYPTION_KEY", "encryption_key"),
]


def _present(setting: str) -> bool:
    try:
        return bool(getattr(settings, setting))
    except ImproperlyConfigured:  # Django's own refusal of an empty SECRET_KEY
        return False


@register
def keys_present(app_configs, **kwargs) -> list[Error]:
    missing = [
        f"{variable} (nor {settings.VAR_DIR / filename})"
        for setting, variable, filename in KEYS
        if not _present(setting)
    ]
    if not missing:
        return []
    return [
        Error(
            f"No {' and no '.join(missing)}.",
            hint="Run 'python manage.py init_var' to generate them into var/ (make setup does), "
            "or set the variables.",
            id="isthmus.E001",
        )
    ]


@register
def sign_on_roles(app_configs, **kwargs) -> list[Error]:
    """Every provider group must map to a role that exists."""
    from replication.governance.policy import ROLES

    wrong = {g: r for g, r in settings.OIDC_ROLES.items() if r not in ROLES}
    if not wrong:
        return []
    return [
        Error(
            "ISTHMUS_OIDC_ROLES maps "
            + ", ".join(f"{g!r} to {r!r}" for g, r in wrong.items())
            + ", which is no role.",
            hint=f"Map each group to one of {', '.join(ROLES)}: group=role,group=role.",
            id="isthmus.E002",
        )
    ]
