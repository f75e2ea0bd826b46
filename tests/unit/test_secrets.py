import pytest
from django.core.exceptions import ImproperlyConfigured

from replication.core.crypto import encrypt, is_sensitive
from replication.core.errors import ReplicationError
from replication.kafka.clusters import parse_client_config
from replication.models import KafkaCluster


@pytest.mark.parametrize(
    "key",
    [
        "sasl.password",
        "sasl.jaas.config",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "sasl.oauthbearer.client.secret",
    ],
)
def test_passwords_and_keys_are_sensitive(key):
    assert is_sensitive(key)


@pytest.mark.parametrize(
    "key",
    [
        "bootstrap.servers",
        "security.protocol",
        "sasl.mechanism",
        "sasl.username",
        "ssl.ca.location",
    ],
)
def test_ordinary_settings_are_not_sensitive(key):
    assert not is_sensitive(key)


def test_sensitive_values_are_encrypted_and_masked():
    cluster = KafkaCluster(name="c", bootstrap_servers="h:9092")
    cluster.set_client_config({"sasl.username": "bob", "sasl.password": "hunter2-secret"})
    assert cluster.client_config == {"sasl.username": "bob"}
    assert "hunter2-secret" not in repr(cluster.secret_config)
    assert cluster.connection_config() == {
        "bootstrap.servers": "h:9092",
        "sasl.username": "bob",
        "sasl.password": "hunter2-secret",
    }
    assert cluster.display_config() == [("sasl.password", "(sensitive)"), ("sasl.username", "bob")]


def test_client_config_lines_are_parsed_with_clear_errors():
    assert parse_client_config("# comment\n\nsecurity.protocol = SASL_SSL\na=b=c\n") == {
        "security.protocol": "SASL_SSL",
        "a": "b=c",
    }
    with pytest.raises(ReplicationError, match="Line 2 .* not 'key=value'"):
        parse_client_config("a=1\njunk\n")
    with pytest.raises(ReplicationError, match="its own field"):
        parse_client_config("bootstrap.servers=x:1")


def test_without_an_encryption_key_nothing_is_encrypted_and_the_error_says_what_to_do(settings):
    settings.ENCRYPTION_KEY = ""
    with pytest.raises(ImproperlyConfigured, match="run 'python manage.py init_var'"):
        encrypt("a password")
