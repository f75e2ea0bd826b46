"""Reading a pasted Replicator configuration: Connect's JSON (wrapped or not) and properties
files, the topics it selects in Replicator's order, the rename, and clear refusals."""

from __future__ import annotations

import json
import re

import pytest

from replication.actions.replicator_import import parse, renamed, selected
from replication.core.errors import ReplicationError

SEED = {  # the seed's dc1-to-dc2 topic2 connector, as Connect's REST API takes it
    "name": "replicator-dc1-to-dc2-topic2",
    "config": {
        "connector.class": "io.confluent.connect.replicator.ReplicatorSourceConnector",
        "topic.whitelist": "topic2",
        "topic.rename.format": "${topic}.replica",
        "provenance.header.enable": "true",
        "src.kafka.bootstrap.servers": "broker-dc1:29091",
        "dest.kafka.bootstrap.servers": "broker-dc2:29092",
    },
}


def test_connect_json_with_its_wrapper_or_without_and_properties_read_the_same():
    wrapped = parse(json.dumps(SEED))
    bare = parse(json.dumps({**SEED["config"], "name": SEED["name"]}))
    properties = parse(
        "# dc1 to dc2\n"
        + "\n".join(f"{k}={v}" for k, v in {**SEED["config"], "name": SEED["name"]}.items())
    )
    assert wrapped == bare == properties
    assert wrapped["name"] == "replicator-dc1-to-dc2-topic2"


def test_topics_are_chosen_as_replicator_chooses_them_and_renamed():
    settings = {
        "topic.whitelist": "orders, gone",
        "topic.regex": "clicks\\..*",
        "topic.blacklist": "clicks.test",
    }
    topics = {"orders", "clicks.eu", "clicks.test", "clicks", "__consumer_offsets", "other"}
    assert selected(settings, topics) == ["clicks.eu", "orders"]
    assert selected({"topic.regex": ".*"}, topics) == sorted(topics - {"__consumer_offsets"})
    assert renamed(SEED["config"], "topic2") == "topic2.replica"
    assert renamed({}, "topic1") == "topic1"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "Paste a Replicator connector's configuration"),
        ('{"name": ', "not valid JSON (line 1, column"),
        ("[1, 2]", "The JSON must be an object"),
        ('{"config": [1]}', "The JSON must be an object"),
        ("topic.whitelist", "Line 1 is not a key=value setting"),
    ],
)
def test_what_is_not_a_configuration_is_refused_saying_why(text, said):
    with pytest.raises(ReplicationError, match=re.escape(said)):
        parse(text)


def test_a_configuration_that_selects_nothing_or_a_bad_regex_is_refused():
    with pytest.raises(ReplicationError, match="selects no topic"):
        selected({"topic.blacklist": "x"}, {"x"})
    with pytest.raises(ReplicationError, match="is not a regular expression"):
        selected({"topic.regex": "("}, {"x"})
