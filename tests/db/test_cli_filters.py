"""The link filters from the command line, as seed 001 gives them: kafka-cluster-links --create
with --consumer-group-filters-json[-file], --acl-filters-json-file and --topic-filters-json[-file],
and kafka-configs --cluster-link with the seed's migration file (Java properties escapes) and with
a JSON value in --add-config. Run as typed in a shell (in the test's process), against a live
console and in-memory clusters."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest

from replication.models import ClusterLink
from tests.db.test_cli import DESTINATION, SOURCE, ok, refused

GROUPS, ACLS, TOPICS = (
    "consumer.offset.group.filters",
    "acl.filters",
    "auto.create.mirror.topics.filters",
)
LINK = "filters-link"
CREATE = (
    f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link {LINK} "
    f"--config bootstrap.servers={SOURCE}"
)
DESCRIBE = f"kafka-configs --bootstrap-server {DESTINATION} --describe --cluster-link {LINK}"
ALTER = f"kafka-configs --bootstrap-server {DESTINATION} --alter --cluster-link {LINK}"
APP, ORDERS = "app", "orders"

GROUP_JSON = f"""{{"groupFilters": [
  {{"name": "{APP}-", "patternType": "PREFIXED", "filterType": "WHITELIST"}},
  {{"name": "{APP}-test", "patternType": "literal", "filterType": "BLACKLIST"}}
]}}
"""
GROUP_STORED = json.dumps(
    {
        "groupFilters": [
            {"name": f"{APP}-", "patternType": "PREFIXED", "filterType": "INCLUDE"},
            {"name": f"{APP}-test", "patternType": "LITERAL", "filterType": "EXCLUDE"},
        ]
    }
)
ACL_JSON = json.dumps(
    {
        "aclFilters": [
            {
                "resourceFilter": {
                    "resourceType": "topic",
                    "name": ORDERS,
                    "patternType": "prefixed",
                },
                "accessFilter": {
                    "principal": "User:bob",
                    "host": "*",
                    "operation": "read",
                    "permissionType": "allow",
                },
            }
        ]
    },
    indent=2,
)
ACL_STORED = json.dumps(
    {
        "aclFilters": [
            {
                "resourceFilter": {
                    "resourceType": "topic",
                    "patternType": "prefixed",
                    "name": ORDERS,
                },
                "accessFilter": {
                    "operation": "read",
                    "permissionType": "allow",
                    "principal": "User:bob",
                    "host": "*",
                },
            }
        ]
    }
)
TOPIC_JSON = f'{{"topicFilters": [{{"name": "{ORDERS}", "patternType": "PREFIXED"}}]}}'
TOPIC_STORED = json.dumps(
    {"topicFilters": [{"name": ORDERS, "patternType": "PREFIXED", "filterType": "INCLUDE"}]}
)

# Seed 001, "Migrating consumer groups", as printed: the echo that writes newFilters.properties.
# In double quotes bash keeps `\ ` as it is, so the file holds backslash-space sequences, which
# Java properties (Kafka's tools) read as spaces.
SEED_ECHO = (
    r'echo "consumer.offset.group.filters={\"groupFilters\": [ \ { \ \"name\": \"*\", \ '
    r"\"patternType\": \"LITERAL\", \ \"filterType\": \"INCLUDE\" \ }, \ { \ \"name\": "
    r'\"someGroup\", \ \"patternType\": \"LITERAL\", \ \"filterType\": \"EXCLUDE\" \ } \ ]}" '
    r"> newFilters.properties"
)
SEED_STORED = json.dumps(
    {
        "groupFilters": [
            {"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"},
            {"name": "someGroup", "patternType": "LITERAL", "filterType": "EXCLUDE"},
        ]
    }
)


def described(typed) -> dict[str, str]:
    """The link's dynamic configs, as kafka-configs --describe prints them (through the API)."""
    lines = ok(typed(DESCRIBE))
    assert lines[0] == f"Dynamic configs for cluster-link {LINK} are:"
    shown = {}
    for line in lines[1:]:
        assert line.startswith("  ") and line.endswith(" sensitive=false synonyms={}"), line
        name, _, value = line[2 : -len(" sensitive=false synonyms={}")].partition("=")
        shown[name] = value
    return shown


def one_line_refusal(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Refused with exit status 1 and a single `Error: ...` line naming the problem."""
    refused(result, *fragments)
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: "), line


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(
            "--consumer-group-filters-json-file {dir}/groups.json "
            "--acl-filters-json-file {dir}/acls.json "
            "--topic-filters-json {topics}",
            id="group-file-topic-json",
        ),
        pytest.param(
            "--consumer-group-filters-json {groups} "
            "--acl-filters-json-file {dir}/acls.json "
            "--topic-filters-json-file {dir}/topics.json",
            id="group-json-topic-file",
        ),
    ],
)
def test_create_sets_each_filter_config_from_its_flag(typed, tmp_path, flags):
    (tmp_path / "groups.json").write_text(GROUP_JSON)
    (tmp_path / "acls.json").write_text(ACL_JSON)
    (tmp_path / "topics.json").write_text(TOPIC_JSON + "\n")
    line = f"{CREATE} " + flags.format(
        dir=tmp_path, groups=shlex.quote(GROUP_JSON), topics=shlex.quote(TOPIC_JSON)
    )
    assert ok(typed(line)) == [f"Cluster link '{LINK}' creation successfully completed."]

    # Stored and described normalised: one canonical JSON per key, defaults filled in.
    expected = {GROUPS: GROUP_STORED, ACLS: ACL_STORED, TOPICS: TOPIC_STORED}
    assert described(typed) == {"bootstrap.servers": SOURCE, **expected}
    configs = ClusterLink.objects.get(name=LINK).configs
    assert configs == {"bootstrap.servers": SOURCE, **expected}
    # The flags set the filters only: syncing stays off until asked for.
    assert not {"consumer.offset.sync.enable", "acl.sync.enable"} & set(configs)


def test_filters_come_with_the_other_configs_and_can_be_validated_only(typed, tmp_path):
    (tmp_path / "acls.json").write_text(ACL_JSON)
    # A properties file with its own filter JSON over continuation lines, as Java reads them.
    link_file = tmp_path / "link.properties"
    link_file.write_text(
        f"bootstrap.servers={SOURCE}\n"
        f'{TOPICS}={{"topicFilters": [ \\\n    {{"name": "{ORDERS}", \\\n'
        '     "patternType": "PREFIXED"}]}\n'
    )
    create = (
        f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link {LINK} "
        f"--config-file {link_file} --config consumer.offset.sync.ms=5000 "
        f"--consumer-group-filters-json {shlex.quote(GROUP_JSON)} "
        f"--acl-filters-json-file {tmp_path}/acls.json"
    )
    assert ok(typed(create + " --validate-only")) == [
        f"Cluster link '{LINK}' creation successfully validated."
    ]
    assert not ClusterLink.objects.exists()
    ok(typed(create))
    assert described(typed) == {
        "bootstrap.servers": SOURCE,
        "consumer.offset.sync.ms": "5000",
        GROUPS: GROUP_STORED,
        ACLS: ACL_STORED,
        TOPICS: TOPIC_STORED,
    }


def test_the_seed_migration_file_updates_the_group_filters_with_kafka_configs(typed, tmp_path):
    # The state before the seed's migration: every group's offsets are migrated.
    every = '{"groupFilters": [{"name": "*", "patternType": "LITERAL", "filterType": "INCLUDE"}]}'
    ok(typed(f"{CREATE} --consumer-group-filters-json {shlex.quote(every)}"))
    assert described(typed)[GROUPS] == json.dumps(json.loads(every))

    # The seed's line, run by bash as the reader would: the file holds `\ ` sequences.
    subprocess.run(["bash", "-c", SEED_ECHO], cwd=tmp_path, check=True, timeout=30)
    written = (tmp_path / "newFilters.properties").read_text()
    assert written.startswith('consumer.offset.group.filters={"groupFilters": [ \\ { \\ "name"')
    assert ok(typed(f"{ALTER} --add-config-file {tmp_path}/newFilters.properties")) == [
        f"Completed updating config for cluster-link {LINK}."
    ]
    assert described(typed)[GROUPS] == SEED_STORED
    assert ClusterLink.objects.get(name=LINK).configs[GROUPS] == SEED_STORED

    # The same file with a bad entry: the console's refusal, naming it, reaches the user.
    bad = tmp_path / "bad.properties"
    bad.write_text(written.replace("EXCLUDE", "NEVER"))
    one_line_refusal(
        typed(f"{ALTER} --add-config-file {bad}"),
        "consumer.offset.group.filters entry 2 of groupFilters ('someGroup'): filterType 'NEVER'",
    )
    assert ClusterLink.objects.get(name=LINK).configs[GROUPS] == SEED_STORED


def test_add_config_takes_json_values_whose_commas_do_not_split_them(typed):
    ok(typed(CREATE))
    group_json = json.dumps(json.loads(GROUP_JSON))  # one line, commas and brackets in it
    configs = f"{GROUPS}={group_json},consumer.offset.sync.ms=7000,{TOPICS}={TOPIC_JSON}"
    ok(typed(f"{ALTER} --add-config {shlex.quote(configs)}"))
    shown = described(typed)
    assert shown[GROUPS] == GROUP_STORED and shown[TOPICS] == TOPIC_STORED
    assert shown["consumer.offset.sync.ms"] == "7000"

    # Kafka's own way of grouping commas, the value in square brackets, works too.
    acls = json.dumps(json.loads(ACL_JSON))
    ok(typed(f"{ALTER} --add-config {shlex.quote(f'{ACLS}=[{acls}],acl.sync.ms=3000')}"))
    shown = described(typed)
    assert shown[ACLS] == ACL_STORED and shown["acl.sync.ms"] == "3000"

    # An unclosed brace is the user's to fix, said at once; a bad entry is the console's.
    unclosed = shlex.quote(GROUPS + '={"groupFilters"')
    one_line_refusal(
        typed(f"{ALTER} --add-config {unclosed}"),
        "leave a '{' open",
    )
    bad = '{"groupFilters": [{"name": "ok"}, {"name": "odd", "patternType": "GLOB"}]}'
    one_line_refusal(
        typed(f"{ALTER} --add-config {shlex.quote(f'{GROUPS}={bad}')}"),
        "entry 2 of groupFilters ('odd'): patternType 'GLOB'",
    )
    assert ClusterLink.objects.get(name=LINK).configs[GROUPS] == GROUP_STORED


def test_filter_flag_mistakes_get_one_line_errors_and_leave_no_link(typed, tmp_path):
    good = tmp_path / "groups.json"
    good.write_text(GROUP_JSON)
    (tmp_path / "binary.json").write_bytes(b'{"groupFilters": []}\x00\x01')
    (tmp_path / "latin1.json").write_bytes(
        '{"groupFilters": [{"name": "caf\xe9"}]}'.encode("latin-1")
    )
    (tmp_path / "empty.json").write_text("  \n")
    (tmp_path / "link.properties").write_text(f"bootstrap.servers={SOURCE}\n{ACLS}=x\n")
    bad_acls = tmp_path / "acls.json"
    bad_acls.write_text(ACL_JSON.replace('"read"', '"peek"'))
    cases = [
        (
            f"{CREATE} --consumer-group-filters-json {shlex.quote(GROUP_JSON)} "
            f"--consumer-group-filters-json-file {good}",
            ["--consumer-group-filters-json or --consumer-group-filters-json-file, not both"],
        ),
        (
            f"{CREATE} --topic-filters-json {shlex.quote(TOPIC_JSON)} "
            f"--topic-filters-json-file {good}",
            ["not both", TOPICS],
        ),
        (
            f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link {LINK} "
            "--config "
            + shlex.quote(f"bootstrap.servers={SOURCE},{GROUPS}=[{GROUP_STORED}]")
            + f" --consumer-group-filters-json-file {good}",
            [f"{GROUPS} is given twice, by --consumer-group-filters-json-file and in --config"],
        ),
        (
            f"kafka-cluster-links --bootstrap-server {DESTINATION} --create --link {LINK} "
            f"--config-file {tmp_path}/link.properties --acl-filters-json-file {bad_acls}",
            [f"{ACLS} is given twice", "--config-file", "give it in one place only"],
        ),
        (
            f"{CREATE} --consumer-group-filters-json-file {tmp_path}/missing.json",
            [f"Cannot read {tmp_path}/missing.json: No such file or directory"],
        ),
        (f"{CREATE} --acl-filters-json-file {tmp_path}", ["Cannot read", "Is a directory"]),
        (
            f"{CREATE} --topic-filters-json-file {tmp_path}/binary.json",
            ["binary.json is not a text file", "binary data"],
        ),
        (
            f"{CREATE} --consumer-group-filters-json-file {tmp_path}/latin1.json",
            ["latin1.json is not a text file", "not UTF-8"],
        ),
        (
            f"{CREATE} --topic-filters-json-file {tmp_path}/empty.json",
            ["empty.json (--topic-filters-json-file) is empty", TOPICS],
        ),
        # The console's refusals, each naming the offending entry.
        (
            f"{CREATE} --acl-filters-json-file {bad_acls}",
            [f"{ACLS} entry 1 of aclFilters, accessFilter: operation 'peek'"],
        ),
        (
            f"{CREATE} --consumer-group-filters-json "
            + shlex.quote('{"groupFilters": [{"name": "a"}, {"name": "b", "filterType": "NO"}]}'),
            [f"{GROUPS} entry 2 of groupFilters ('b'): filterType 'NO'"],
        ),
        (
            f"{CREATE} --topic-filters-json " + shlex.quote('{"topicFilters": [{"name": "a"}'),
            [f"{TOPICS} is not valid JSON at line 1"],
        ),
        (
            f"kafka-cluster-links --bootstrap-server {DESTINATION} --list "
            f"--topic-filters-json {shlex.quote(TOPIC_JSON)}",
            ["--topic-filters-json is for --create only"],
        ),
    ]
    if os.geteuid() != 0:  # root reads any file
        unreadable = tmp_path / "unreadable.json"
        unreadable.write_text(GROUP_JSON)
        unreadable.chmod(0)
        cases.append(
            (
                f"{CREATE} --consumer-group-filters-json-file {unreadable}",
                [f"Cannot read {unreadable}: Permission denied"],
            )
        )
    for line, fragments in cases:
        one_line_refusal(typed(line), *fragments)
    assert not ClusterLink.objects.exists()
