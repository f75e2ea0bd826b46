"""Isthmus settings. Everything that differs between machines comes from the environment.

ISTHMUS_VAR_DIR   local state (database, keys, devstack data); default ./var
DATABASE_URL      default sqlite:///<var>/isthmus.sqlite3, or the devstack's PostgreSQL
ISTHMUS_DB        sqlite (default) or postgres: without DATABASE_URL, the database is then the
                  PostgreSQL that `manage.py devstack up` runs on 127.0.0.1:5433
ISTHMUS_TEST_DATABASE  the tests' database: a file for SQLite, a name for PostgreSQL
REDIS_URL         Celery broker and control channel; default redis://127.0.0.1:6380/0
ISTHMUS_REDIS_SENTINELS  host:port,host:port: Redis through these Sentinels (REDIS_URL then
                  gives only the password and database); ISTHMUS_REDIS_SENTINEL_MASTER (isthmus)
                  the master they watch, ISTHMUS_REDIS_SENTINEL_PASSWORD their own password
SPARK_MASTER      where the mirror engine runs; default local[*]
ISTHMUS_SPARK_CONF  extra Spark settings for the mirror engine, key=value,key=value
ISTHMUS_SPARK_AUTH_SECRET  the shared secret of a standalone Spark cluster (spark:// master)
SECRET_KEY        Django's signing key; when unset, the one `manage.py init_var` generated
                  into <var>/secret_key
ISTHMUS_ENCRYPTION_KEY  Fernet key for secrets at rest; when unset, the one `manage.py
                  init_var` generated into <var>/encryption_key

Importing the settings writes nothing: `manage.py init_var` (which `make setup`, so `make demo`
and `make test`, runs) makes var/ and the keys.
ISTHMUS_ORDINARY_BOOTSTRAP  where a client of no privilege reaches each registered cluster,
                  name=host:port,name=host:port (the scenarios' read-only check); default
                  the embedded stack's PLAINTEXT listeners:
                  source=127.0.0.1:9092,destination=127.0.0.1:9093
ISTHMUS_ENGINE_NAME  the engine this host keeps (`manage.py engine`): a network zone's, as the
                  clusters registered there name it; unset: the console's own
ISTHMUS_LOGIN_FAILURE_LIMIT, ISTHMUS_LOGIN_LOCKOUT_MINUTES  login throttling; default 5
                  failed logins (per user name, per address) lock out for 15 minutes
ISTHMUS_DEVSTACK_PORT_OFFSET  shifts every port of the embedded stack (a second one beside)
ISTHMUS_DEVSTACK_BROKERS  brokers per embedded cluster: 1 (default) or 3 (replication factor 3,
                  min.insync.replicas 2; the second and third broker's ports are the first's
                  plus 10 and 20)
ISTHMUS_DEVSTACK_REDIS_SENTINEL  1: the embedded stack runs a replica of Redis and a Sentinel,
                  and its processes reach Redis through it
ISTHMUS_DEVSTACK_HOSTS  2: the embedded stack runs Isthmus as two hosts on this machine
                  (docs/deployment.md), on PostgreSQL; default 1
ISTHMUS_HTTPS     1 behind a reverse proxy that ends TLS: secure cookies, X-Forwarded-Proto
ISTHMUS_CONSOLE_URL  the console's address as users reach it, for links in notifications;
                  default http://127.0.0.1:8000
ISTHMUS_NOTIFY_WEBHOOK_URL  where requesters' notifications are POSTed as JSON (a chat
                  tool's incoming webhook, say); default none
ISTHMUS_OIDC_ISSUER, ISTHMUS_OIDC_CLIENT_ID, ISTHMUS_OIDC_CLIENT_SECRET  single sign-on through
                  an OpenID Connect identity provider (its issuer URL, and this console's client
                  there); default off
ISTHMUS_OIDC_ROLES  the provider's groups mapped to roles, group=role,group=role
ISTHMUS_OIDC_GROUPS_CLAIM (groups), ISTHMUS_OIDC_NAME  the ID token claim that lists the
                  groups (a dotted path reaches into nested claims: realm_access.roles); the
                  provider's name on the sign-in button
ISTHMUS_OIDC_SCOPES  the scopes asked for, space- or comma-separated; default
                  "openid profile email" (add the one that puts groups in the ID token, if the
                  provider has one)
ISTHMUS_OIDC_USERNAME_CLAIM  the claim that names the user here; default preferred_username
                  (without it: the e-mail, else the subject)
ISTHMUS_EMAIL_HOST, ISTHMUS_EMAIL_PORT (25), ISTHMUS_EMAIL_USER, ISTHMUS_EMAIL_PASSWORD,
ISTHMUS_EMAIL_TLS (1: STARTTLS), ISTHMUS_EMAIL_FROM  the mail server that e-mails requesters
                  their notifications (to the address on their account); default none
DEBUG, ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS
"""

import os
import re
import socket
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

# Celery's settings that no environment variable changes: its queues, the beat's schedule.
from console.celery_settings import *  # noqa: F403
from console.log_filters import make_log_records_inert
from infra import redis_connect

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ISTHMUS_VAR_DIR", BASE_DIR / "var")).resolve()
# The only place link configs may name files on this machine (trust stores, key stores).
TLS_FILES_DIR = Path(os.environ.get("ISTHMUS_TLS_DIR", VAR_DIR / "tls")).resolve()


def _key_from_env_or_file(env_name: str, filename: str) -> str:
    """A key from the environment, or the one `manage.py init_var` generated into var/. Until
    then it is empty: Django refuses an empty SECRET_KEY where one is needed, and
    replication.core.crypto an empty encryption key, each saying to run init_var."""
    return os.environ.get(env_name) or _var_file(filename)


def _var_file(filename: str) -> str:
    path = VAR_DIR / filename
    return path.read_text().strip() if path.exists() else ""


def _env_bool(name: str) -> bool:
    """A yes/no variable: 1, true, yes, on or 0, false, no, off (or unset); anything else
    stops start-up naming the variable, rather than being read as "no"."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a yes or no: give 1 or 0 (or unset it).")


def _env_number(name: str, default: float, kind: type = int, minimum: float = 0):
    """A number variable (`kind` int or float) of at least `minimum`; anything else stops
    start-up naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        word = "a whole number" if kind is int else "a number"
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not {word} of at least {minimum}: give e.g. {default}, or unset it."
        )
    return value


def _env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def spark_conf(text: str) -> dict[str, str]:
    """`key=value,key=value` as Spark settings (ISTHMUS_SPARK_CONF); a value may hold `=`."""
    conf = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ImproperlyConfigured(f"ISTHMUS_SPARK_CONF: {item!r} is not key=value")
        conf[key.strip()] = value.strip()
    return conf


SECRET_KEY = _key_from_env_or_file("SECRET_KEY", "secret_key")
ENCRYPTION_KEY = _key_from_env_or_file("ISTHMUS_ENCRYPTION_KEY", "encryption_key")
DEBUG = _env_bool("DEBUG")
ALLOWED_HOSTS = _env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = _env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "axes",  # login throttling: console/login_throttle.py
    "replication",
    "console",
    "devstack",  # the embedded stack's commands: manage.py devstack, setup_demo
]

MIDDLEWARE = [
    "console.middleware.SecurityHeaders",  # first: its headers go on every answer
    "console.api.middleware.RefuseUnservedHostsInEnvelope",  # before anything asks for the host
    "django.middleware.security.SecurityMiddleware",
    "console.middleware.RefuseNulCharacters",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "console.middleware.RefuseUnreadableForms",
    "django_htmx.middleware.HtmxMiddleware",
    "console.api.middleware.ApiErrors",
    # Last, as axes asks: turns a refused (locked-out) login into console.login_throttle's page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.access.context",
            ],
        },
    }
]

# The embedded stack's ports, shifted by this much (e.g. 1000: Kafka on 10092 and 10093, Redis
# on 7380), to run a second stack beside the first: the tests that stop brokers run on one.
DEVSTACK_PORT_OFFSET = _env_number("ISTHMUS_DEVSTACK_PORT_OFFSET", 0)
# Brokers per embedded cluster: 1 (small machines), or 3 as production runs them (replication
# factor 3, min.insync.replicas 2; the fault tests run on these).
DEVSTACK_BROKERS = _env_number("ISTHMUS_DEVSTACK_BROKERS", 1)
if DEVSTACK_BROKERS not in (1, 3):
    raise ImproperlyConfigured(
        f"ISTHMUS_DEVSTACK_BROKERS is {DEVSTACK_BROKERS}: the embedded clusters have 1 or 3 brokers"
    )
# A replica of the embedded stack's Redis and a Sentinel (devstack/sentinel.py).
DEVSTACK_REDIS_SENTINEL = _env_bool("ISTHMUS_DEVSTACK_REDIS_SENTINEL")
# Isthmus's processes as two hosts, each a process group of its own (devstack/hosts.py), and
# which of them this process belongs to (the devstack sets it there: the engine joins its group).
DEVSTACK_HOSTS = _env_number("ISTHMUS_DEVSTACK_HOSTS", 1)
if DEVSTACK_HOSTS not in (1, 2):
    raise ImproperlyConfigured(
        f"ISTHMUS_DEVSTACK_HOSTS is {DEVSTACK_HOSTS}: the embedded stack runs 1 host or 2"
    )
DEVSTACK_HOST = os.environ.get("ISTHMUS_DEVSTACK_HOST", "").strip()


def _devstack_port(port: int) -> int:  # devstack.kafka.port, which cannot be imported here
    return port + DEVSTACK_PORT_OFFSET


# Two hosts share a database outside both, as a managed one would be: PostgreSQL.
ISTHMUS_DB = os.environ.get("ISTHMUS_DB", "").strip().lower() or (
    "postgres" if DEVSTACK_HOSTS == 2 else "sqlite"
)
if ISTHMUS_DB not in ("sqlite", "postgres"):
    raise ImproperlyConfigured(f"ISTHMUS_DB is {ISTHMUS_DB!r}: it is sqlite or postgres")
if DEVSTACK_HOSTS == 2 and ISTHMUS_DB != "postgres":
    raise ImproperlyConfigured(
        "ISTHMUS_DEVSTACK_HOSTS=2 runs the two hosts on PostgreSQL: leave ISTHMUS_DB unset or "
        "set it to postgres ('ISTHMUS_DB=postgres make setup' installs it)"
    )
# ISTHMUS_DB=postgres without DATABASE_URL: the PostgreSQL the devstack runs (its `postgres`
# part), made with this role, database and password.
DEVSTACK_POSTGRES = None
if ISTHMUS_DB == "postgres" and not os.environ.get("DATABASE_URL"):
    DEVSTACK_POSTGRES = {
        "host": "127.0.0.1",
        "port": _devstack_port(5433),
        "user": "isthmus",
        "name": "isthmus",
        "password": _var_file("postgres_password"),  # made by init_var
    }
    _default_database_url = "postgres://{user}:{password}@{host}:{port}/{name}".format(
        **DEVSTACK_POSTGRES
    )
else:
    _default_database_url = f"sqlite:///{VAR_DIR / 'isthmus.sqlite3'}"
# Connections are kept for a minute and checked before reuse: after a database server
# restart, the next request reconnects instead of failing on the dead connection.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", _default_database_url),
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The web server, worker and beat share one file; wait for a lock rather than fail.
    # WAL lets readers go on beside a writer; IMMEDIATE takes the write lock up front, so two
    # writers queue instead of deadlocking on a lock upgrade.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=20, transaction_mode="IMMEDIATE", init_command="PRAGMA journal_mode=WAL;"
    )
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, so that the Celery worker started by the tests can open it too.
    # ISTHMUS_TEST_DATABASE lets two test runs share a checkout (and the clusters) side by side.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("ISTHMUS_TEST_DATABASE", str(VAR_DIR / "test-isthmus.sqlite3"))
    }
elif os.environ.get("ISTHMUS_TEST_DATABASE"):
    # A server database: the tests' database by that name (a file's name, extension dropped,
    # when it names a file), created by the tests, so the role needs CREATEDB.
    _test_name = Path(os.environ["ISTHMUS_TEST_DATABASE"]).name.split(".")[0]
    DATABASES["default"]["TEST"] = {"NAME": re.sub(r"\W", "_", _test_name)[:63]}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "console.login_throttle.ThrottlingBackend",  # first: refuses a locked-out name or address
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes): AXES_FAILURE_LIMIT failed logins for one user name, or from
# one address, lock that name or that address out for AXES_COOLOFF_TIME.
# `manage.py axes_reset_username NAME` (or axes_reset_ip ADDRESS, axes_reset) unlocks at once.
AXES_FAILURE_LIMIT = _env_number("ISTHMUS_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=_env_number("ISTHMUS_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own, not the pair
AXES_RESET_ON_SUCCESS = True
# A failure while locked out does not restart the clock, so "try again in N minutes" holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_CLIENT_IP_CALLABLE = "console.login_throttle.client_address"
AXES_LOCKOUT_CALLABLE = "console.login_throttle.locked_out"
AXES_DISABLE_ACCESS_LOG = True  # successful logins: the audit trail is the record kept
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_HTTPONLY = True
# ISTHMUS_HTTPS=1: the console is reached over HTTPS, through a reverse proxy that ends TLS.
# Its cookies then go over HTTPS only, and a request counts as HTTPS when the proxy says so in
# X-Forwarded-Proto (the proxy must set that header itself, replacing any the client sent).
if _env_bool("ISTHMUS_HTTPS"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
CSRF_COOKIE_HTTPONLY = False  # HTMX reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))  # collectstatic target
STATICFILES_DIRS = [BASE_DIR / "console" / "static"]
WHITENOISE_USE_FINDERS = True  # serve straight from the apps; no collectstatic step needed

REDIS_URL = os.environ.get("REDIS_URL", f"redis://127.0.0.1:{_devstack_port(6380)}/0")
# Through Sentinels (docs/deployment.md), every client reaches the master they name now: the
# embedded stack's own Sentinel when it runs one.
try:
    REDIS_SENTINELS = redis_connect.sentinels_from(
        os.environ,
        # The two hosts' Sentinels and their witness (devstack/hosts.py), or the one beside Redis.
        ",".join(f"127.0.0.1:{_devstack_port(port)}" for port in (26381, 26382, 26383))
        if DEVSTACK_HOSTS == 2
        else f"127.0.0.1:{_devstack_port(26380)}"
        if DEVSTACK_REDIS_SENTINEL
        else "",
        REDIS_URL,
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# How long a promote or failover waits for the link's stream to stop writing the mirror
# before it gives up and leaves the mirror as it was.
STOP_TIMEOUT_S = _env_number("ISTHMUS_STOP_TIMEOUT_S", 90, minimum=1)
# Notifications to requesters (replication/governance/notifications.py): the console always;
# a webhook and e-mail only when configured.
CONSOLE_URL = os.environ.get("ISTHMUS_CONSOLE_URL", "http://127.0.0.1:8000").rstrip("/")
NOTIFY_WEBHOOK_URL = os.environ.get("ISTHMUS_NOTIFY_WEBHOOK_URL", "").strip()
if NOTIFY_WEBHOOK_URL and not re.match(r"https?://", NOTIFY_WEBHOOK_URL):
    raise ImproperlyConfigured("ISTHMUS_NOTIFY_WEBHOOK_URL must start with http:// or https://")
EMAIL_HOST = os.environ.get("ISTHMUS_EMAIL_HOST", "").strip()
EMAIL_PORT = _env_number("ISTHMUS_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = os.environ.get("ISTHMUS_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("ISTHMUS_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("ISTHMUS_EMAIL_TLS")
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = os.environ.get("ISTHMUS_EMAIL_FROM", "isthmus@localhost")
# Single sign-on (replication/governance/single_sign_on.py); console/checks.py checks the
# roles named.
OIDC_ISSUER = os.environ.get("ISTHMUS_OIDC_ISSUER", "").strip()
OIDC_CLIENT_ID = os.environ.get("ISTHMUS_OIDC_CLIENT_ID", "").strip()
OIDC_CLIENT_SECRET = os.environ.get("ISTHMUS_OIDC_CLIENT_SECRET", "")
OIDC_GROUPS_CLAIM = os.environ.get("ISTHMUS_OIDC_GROUPS_CLAIM", "groups").strip()
OIDC_NAME = os.environ.get("ISTHMUS_OIDC_NAME", "single sign-on").strip()
OIDC_ROLES = dict(item.split("=", 1) for item in _env_list("ISTHMUS_OIDC_ROLES", "") if "=" in item)
_OIDC_SCOPES = os.environ.get("ISTHMUS_OIDC_SCOPES", "openid profile email")
OIDC_SCOPES = _OIDC_SCOPES.replace(",", " ").split()  # space- or comma-separated
OIDC_USERNAME_CLAIM = os.environ.get("ISTHMUS_OIDC_USERNAME_CLAIM", "preferred_username").strip()
if OIDC_ISSUER and not (OIDC_CLIENT_ID and re.match(r"https?://", OIDC_ISSUER)):
    raise ImproperlyConfigured(
        "ISTHMUS_OIDC_ISSUER must be an http(s) URL, with ISTHMUS_OIDC_CLIENT_ID set too."
    )
if OIDC_ISSUER and "openid" not in OIDC_SCOPES:
    raise ImproperlyConfigured(
        "ISTHMUS_OIDC_SCOPES must include openid (OpenID Connect's own scope, without which "
        f"the provider sends no ID token); it is {' '.join(OIDC_SCOPES)!r}."
    )
if not (OIDC_GROUPS_CLAIM and OIDC_USERNAME_CLAIM):
    raise ImproperlyConfigured(
        "ISTHMUS_OIDC_GROUPS_CLAIM and ISTHMUS_OIDC_USERNAME_CLAIM name claims of the ID token; "
        "leave them unset for the defaults (groups, preferred_username)."
    )
# How long an approval request waits for its approvals before it expires.
APPROVAL_REQUEST_TTL_S = _env_number("ISTHMUS_APPROVAL_REQUEST_TTL_S", 24 * 3600, minimum=60)
SPARK_MASTER = os.environ.get("SPARK_MASTER", "local[*]")
# Extra Spark settings for the engine (the Spark application), passed to spark-submit as --conf
# after the launcher's own (so they win): spark.cores.max, spark.pyspark.python, the Kubernetes
# image...
# They show on the command line: no secrets here.
SPARK_CONF = spark_conf(os.environ.get("ISTHMUS_SPARK_CONF", ""))
# The secret a standalone Spark cluster (SPARK_MASTER=spark://...) shares with its applications
# (its spark.authenticate.secret): the engine is refused on such a master without
# it. It reaches spark-submit in an owner-only file, never on the command line.
SPARK_AUTH_SECRET = os.environ.get("ISTHMUS_SPARK_AUTH_SECRET", "").strip()
# Where the engine keeps its files, a folder per console (engine-<id>): its pid file and log, the
# code shipped to executors, a standalone master's secret file. (ISTHMUS_STREAM_CHECKPOINT_DIR,
# its old name, is still read: it never held a checkpoint.)
STREAM_DIR = Path(
    os.environ.get("ISTHMUS_STREAM_DIR")
    or os.environ.get("ISTHMUS_STREAM_CHECKPOINT_DIR")
    or VAR_DIR / "streams"
).resolve()
# How many copier slots the engine runs (unset: one per core Spark gives it).
STREAM_TASKS = _env_number("ISTHMUS_STREAM_TASKS", 0) or None
# The engine starts with the worker's first supervision, so a first link (and every new one)
# finds it warm; ISTHMUS_ENGINE_LAZY=1 starts it with the first link that has mirrors instead.
ENGINE_LAZY = _env_bool("ISTHMUS_ENGINE_LAZY")
# This host's name, as the active beat's lease and the engine's heartbeat name it: hosts that
# share the database and Redis tell by it whose engine runs (docs/deployment.md).
HOST_NAME = os.environ.get("ISTHMUS_HOST_NAME", "").strip() or socket.gethostname()
# The engine this process keeps: unset for the deployment's own (its beat starts it); a name on
# a host of another network zone, where `manage.py engine` keeps the engine that copies the
# links of the clusters registered with that name (docs/deployment.md, "Engines in other
# network zones").
ENGINE_NAME_PATTERN = r"[a-z0-9][a-z0-9-]{0,39}"
ENGINE_NAME = os.environ.get("ISTHMUS_ENGINE_NAME", "").strip()
if ENGINE_NAME and not re.fullmatch(ENGINE_NAME_PATTERN, ENGINE_NAME):
    raise ImproperlyConfigured(
        f"ISTHMUS_ENGINE_NAME={ENGINE_NAME!r} is not an engine name: use 1-40 lower-case "
        "letters, digits and '-', starting with a letter or digit (or unset it)."
    )
# How long the engine's heartbeat may be silent before a host other than the one that started
# it starts it again (the engine's epochs fence off the old one should it come back). It beats
# every second, a starting one too: 10 s is ten beats missed.
ENGINE_TAKEOVER_S = _env_number("ISTHMUS_ENGINE_TAKEOVER_S", 10.0, float, minimum=3)
# Each host that does not run the engine keeps a spare one started (its Spark up, claiming
# nothing), which a takeover adopts instead of starting Spark: ~20 s less of a host's loss, for
# the spare's memory (replication/engine/spare.py).
ENGINE_SPARE = _env_bool("ISTHMUS_ENGINE_SPARE")

CELERY_BROKER_URL = CELERY_RESULT_BACKEND = redis_connect.celery_url(REDIS_URL, REDIS_SENTINELS)
if REDIS_SENTINELS is not None:
    CELERY_BROKER_TRANSPORT_OPTIONS = redis_connect.celery_options(REDIS_SENTINELS, 2)
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
    CELERY_TASK_PUBLISH_RETRY_POLICY = redis_connect.CELERY_PUBLISH_RETRY

# How long a request to a Kafka cluster may take before the console calls it unreachable.
KAFKA_ADMIN_TIMEOUT = _env_number("ISTHMUS_KAFKA_TIMEOUT", 5.0, float, minimum=0.1)
ISTHMUS_ORDINARY_BOOTSTRAP = dict(
    pair.split("=", 1)
    for pair in os.environ.get(
        "ISTHMUS_ORDINARY_BOOTSTRAP",
        f"source=127.0.0.1:{_devstack_port(9092)},destination=127.0.0.1:{_devstack_port(9093)}",
    ).split(",")
    if "=" in pair
)
# Gateways (docs/gateways.md): how long a switch waits for the proxy to listen (a JVM's start,
# long on a busy machine), then for the new cluster to answer through it, before it puts the old
# route back; and whether a gateway may listen beyond loopback.
GATEWAY_START_S = _env_number("ISTHMUS_GATEWAY_START_S", 90.0, float, minimum=5)
GATEWAY_ANSWER_S = _env_number("ISTHMUS_GATEWAY_ANSWER_S", 15.0, float, minimum=1)
GATEWAY_ANY_ADDRESS = _env_bool("ISTHMUS_GATEWAY_ANY_ADDRESS")
# Where the gateways' proxies run: unset, on the host that asks (the embedded stack is one
# host); a queue's name, on the host whose worker takes it (the compose file's `gateway`).
GATEWAY_QUEUE = os.environ.get("ISTHMUS_GATEWAY_QUEUE", "")
# What stops and starts a cluster for the disaster-recovery scenario (a class with stop(name)
# and start(name); replication.scenarios.clusters): the embedded stack's by default.
ISTHMUS_CLUSTER_CONTROL = os.environ.get(
    "ISTHMUS_CLUSTER_CONTROL", "devstack.control.EmbeddedClusters"
)
# What answers the console's Kafka admin calls (`replication.kafka.connections`): a class taking
# (client config, timeout=) with infra.kafka_admin.KafkaAdmin's methods. The database tests
# choose an in-memory Kafka here (tests/memory_kafka.py).
ISTHMUS_KAFKA_ADMIN = os.environ.get("ISTHMUS_KAFKA_ADMIN", "infra.kafka_admin.KafkaAdmin")
# And what reads the mirrors' offset translation for the console (`replication.kafka.translations`).
ISTHMUS_TRANSLATION_READER = os.environ.get(
    "ISTHMUS_TRANSLATION_READER", "spark_jobs.translation.Reader"
)
# And what copies and reads records on one cluster for a truncate-and-restore or a reverse
# (`replication.kafka.connections.records`): a class taking (client config) with
# infra.kafka_copy.Records's methods.
ISTHMUS_KAFKA_RECORDS = os.environ.get("ISTHMUS_KAFKA_RECORDS", "infra.kafka_copy.Records")
# How the topics, links and groups of a scenario run started without a tag are named:
# "<prefix>-<random>-...".
SCENARIO_NAME_PREFIX = "scenario"

make_log_records_inert()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # A refused request (4xx) is one line, without a traceback.
    "filters": {"one_line_for_4xx": {"()": "console.log_filters.OneLineFor4xx"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["one_line_for_4xx"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # librdkafka repeats each connection failure many times a second; the console's own
        # messages carry its cause. Set LIBRDKAFKA_LOG_LEVEL=DEBUG to see it all.
        "librdkafka": {"level": os.environ.get("LIBRDKAFKA_LOG_LEVEL", "CRITICAL")},
        "py4j": {"level": "WARNING"},
        # Four lines of INFO for each login; lockouts are WARNINGs, failures are audited.
        "axes": {"level": os.environ.get("AXES_LOG_LEVEL", "WARNING")},
        # "Task ... succeeded" once a second from the syncers says nothing; tasks log their news.
        "celery.app.trace": {"level": os.environ.get("CELERY_TASK_LOG_LEVEL", "WARNING")},
        "celery.worker.strategy": {"level": os.environ.get("CELERY_TASK_LOG_LEVEL", "WARNING")},
    },
}
