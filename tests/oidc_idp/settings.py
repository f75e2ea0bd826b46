"""A real OpenID Connect provider for the sign-on tests: django-oauth-toolkit in a Django
project of its own (its own database, its own process: tests.oidc_idp.run), not a stand-in."""

import os
from pathlib import Path

HERE = Path(__file__).parent
SECRET_KEY = "the-test-identity-provider-only"  # noqa: S105 (a throwaway test provider)
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.oidc_idp.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["IDP_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(os.environ["IDP_KEY"]).read_text(),
    "PKCE_REQUIRED": True,
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_idp.validator.GroupsValidator",
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Profile",
        "email": "E-mail",
        "groups": "Groups",
    },
}
