"""The command-line tools' parsing and output formats, against the seed tutorial's text."""

import pytest

from isthmus_cli.common import CliError, parser, read_properties, split_configs
from isthmus_cli.mirrors import _stop_outcome
from isthmus_cli.replica_status import COLUMNS, MIRROR_COLUMNS, table

# From the tutorial: kafka-replica-status --topics demo --include-mirror
TUTORIAL_REPLICA_STATUS = [
    "Topic Partition Replica IsLeader IsObserver IsIsrEligible IsInIsr IsCaughtUp "
    "LastCaughtUpLagMs LastFetchLagMs LogStartOffset LogEndOffset LeaderEpoch MirrorState "
    "MirrorLastFetchTimeMs MirrorLastFetchHighWatermark",
    "demo  0         1       true     false      true          true    true       0          "
    "       0              0              3            0           ACTIVE      -1           "
    "         -1",
]


def test_replica_status_is_laid_out_like_the_tutorial():
    row = [
        "demo",
        "0",
        "1",
        "true",
        "false",
        "true",
        "true",
        "true",
        "0",
        "0",
        "0",
        "3",
        "0",
        "ACTIVE",
        "-1",
        "-1",
    ]
    assert table([row], COLUMNS + MIRROR_COLUMNS) == TUTORIAL_REPLICA_STATUS


def test_replica_status_of_no_topics_is_just_the_header():
    assert table([], COLUMNS) == [" ".join(COLUMNS)]


def test_config_lists_split_on_commas_outside_brackets():
    assert split_configs("bootstrap.servers=localhost:9092,metadata.max.age.ms=5000") == {
        "bootstrap.servers": "localhost:9092",
        "metadata.max.age.ms": "5000",
    }
    assert split_configs("bootstrap.servers=[a:1,b:2],x=y") == {
        "bootstrap.servers": "a:1,b:2",
        "x": "y",
    }
    with pytest.raises(CliError, match="is not name=value"):
        split_configs("bootstrap.servers")


def test_properties_files_are_read_like_java_properties(tmp_path):
    path = tmp_path / "link.properties"
    path.write_text("# a comment\n! another\nbootstrap.servers=h:1\nsasl.mechanism: PLAIN\n\n")
    assert read_properties(path) == {"bootstrap.servers": "h:1", "sasl.mechanism": "PLAIN"}
    path.write_text(
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="u" \\\n'
        '    password="p";\n'
    )
    assert read_properties(path) == {
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";'
    }
    path.write_text("no separator here\n")
    with pytest.raises(CliError, match="line 1"):
        read_properties(path)
    with pytest.raises(CliError, match="Cannot read"):
        read_properties(tmp_path / "missing")


def test_names_in_api_paths_are_checked_and_an_action_cannot_ride_in_a_name():
    from isthmus_cli.common import CliError, Session

    session = Session.__new__(Session)  # only its path building, no console or cluster
    session.links = "/clusters/c/links"
    assert session.link_path("l", "mirrors:pause") == "/clusters/c/links/l/mirrors:pause"
    assert session.link_path("-", "mirrors") == "/clusters/c/links/-/mirrors"
    assert session.link_path("l", "mirrors", "t.1") == "/clusters/c/links/l/mirrors/t.1"
    for bad in ("a/b", "demo:promote", "x?force=true", "", "..%2F"):
        with pytest.raises(CliError, match="is not a valid name"):
            session.link_path("l", "mirrors", bad)
        with pytest.raises(CliError, match="is not a valid name"):
            session.link_path(bad, "configs")


def test_an_option_value_that_begins_with_a_dash_is_taken_as_its_value():
    # Kafka cluster ids are base64: one in 32 begins with a dash.
    p = parser("kafka-cluster-links", "")
    p.add_argument("--cluster-id")
    p.add_argument("--validate-only", action="store_true")
    args = p.parse_args(
        [
            "--bootstrap-server",
            "b:9093",
            "--cluster-id",
            "-x9vnJK8ToSeW7OIQWh4qA",
            "--validate-only",
        ]
    )
    assert (args.cluster_id, args.validate_only) == ("-x9vnJK8ToSeW7OIQWh4qA", True)
    # A known option is never taken for a value: the missing value is still said.
    with pytest.raises(SystemExit):
        p.parse_args(["--bootstrap-server", "b:9093", "--cluster-id", "--validate-only"])


def test_a_validated_stop_prints_each_partitions_lag_in_records_and_ms(capsys):
    lags = [
        {"partition": 0, "lag": 12, "lag_ms": 4200},
        {"partition": 1, "lag": 0, "lag_ms": 0},
        {"partition": 2, "lag": 3},  # an older console: no lag in time
    ]
    outcome = {"mirror_topic_name": "orders", "error_code": None, "mirror_lags": lags}
    assert _stop_outcome(outcome, validate_only=True)
    assert capsys.readouterr().out == (
        "Request for stopping topic orders's mirror was successfully validated (lag per partition "
        "0: 12 records, 4200 ms; 1: 0 records, 0 ms; 2: 3 records, ms unknown).\n"
    )
