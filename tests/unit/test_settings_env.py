"""Settings refuse nonsense in the environment: start-up stops, naming the variable, instead of
reading a typo as "no" or failing later in Python's own words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READ = "import console.settings as s; print(s.DEBUG, s.STOP_TIMEOUT_S, s.KAFKA_ADMIN_TIMEOUT)"


def _settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", READ],
        cwd=ROOT,
        env={**os.environ, "ISTHMUS_VAR_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "name,value",
    [
        ("DEBUG", "maybe"),
        ("ISTHMUS_HTTPS", "tru"),
        ("ISTHMUS_STOP_TIMEOUT_S", "ninety"),
        ("ISTHMUS_STOP_TIMEOUT_S", "0"),
        ("ISTHMUS_KAFKA_TIMEOUT", "5s"),
        ("ISTHMUS_LOGIN_FAILURE_LIMIT", "-1"),
        ("ISTHMUS_STREAM_TASKS", "1.5"),
        ("ISTHMUS_DEVSTACK_PORT_OFFSET", "-1000"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(tmp_path, name, value):
    result = _settings(tmp_path, **{name: value})
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {name}={value!r} is not" in result.stderr


def test_good_values_are_read(tmp_path):
    result = _settings(
        tmp_path, DEBUG="yes", ISTHMUS_STOP_TIMEOUT_S="30", ISTHMUS_KAFKA_TIMEOUT="2.5"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "30", "2.5"]


def test_importing_the_settings_writes_nothing(tmp_path):
    var = tmp_path / "var"
    result = _settings(var)
    assert result.returncode == 0, result.stderr
    assert not var.exists()


def _manage(var: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "ISTHMUS_ENCRYPTION_KEY")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**env, "ISTHMUS_VAR_DIR": str(var)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_keys_the_console_says_to_run_init_var_which_makes_them_once(tmp_path):
    var = tmp_path / "var"
    refused = _manage(var, "check")
    assert refused.returncode != 0
    assert "No SECRET_KEY" in refused.stderr and "no ISTHMUS_ENCRYPTION_KEY" in refused.stderr
    assert "Run 'python manage.py init_var'" in refused.stderr
    assert not var.exists()

    assert _manage(var, "init_var").returncode == 0
    keys = {name: (var / name).read_text() for name in ("secret_key", "encryption_key")}
    assert all(len(key) >= 40 for key in keys.values())
    assert {oct((var / name).stat().st_mode & 0o777) for name in keys} == {"0o600"}
    assert var.stat().st_mode & 0o007 == 0  # nothing for others
    assert (var / "static").is_dir()
    assert _manage(var, "check").returncode == 0

    assert _manage(var, "init_var").returncode == 0  # again: the keys are kept, not replaced
    assert {name: (var / name).read_text() for name in keys} == keys


def test_a_port_offset_shifts_every_port_of_the_embedded_stack(tmp_path):
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "from devstack import kafka; from devstack.stack import Stack; "
        "s = Stack(settings.VAR_DIR); "
        "print(kafka.SOURCE.bootstrap, kafka.DESTINATION.sasl_bootstrap, settings.REDIS_URL, "
        "settings.ISTHMUS_ORDINARY_BOOTSTRAP['source'], s.redis_port, s.web_port)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")},
            "ISTHMUS_VAR_DIR": str(tmp_path),
            "ISTHMUS_DEVSTACK_PORT_OFFSET": "1000",
            "DJANGO_SETTINGS_MODULE": "console.settings",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "127.0.0.1:10092",
        "127.0.0.1:10193",
        "redis://127.0.0.1:7380/0",
        "127.0.0.1:10092",
        "7380",
        "9000",
    ]


def test_celery_reads_its_queues_and_beat_from_the_settings_module_they_are_kept_beside():
    from console import celery_settings
    from console.celery import app

    assert app.conf.beat_schedule == celery_settings.CELERY_BEAT_SCHEDULE
    assert "sample-lags" in app.conf.beat_schedule
    assert app.conf.task_routes["replication.tasks.run_drill"] == {"queue": "scenarios"}
    assert app.conf.broker_url.startswith("redis://")  # REDIS_URL, from the environment
