"""How the tools read Java properties files and kafka-configs' --add-config lists, as Kafka's
own tools read them (the link filters' JSON values kept whole)."""

from __future__ import annotations

import pytest

from isthmus_cli.common import read_properties, split_configs

GROUPS = "consumer.offset.group.filters"


def test_properties_and_config_lists_are_read_as_kafkas_tools_read_them(tmp_path):
    """The values Java's Properties.load gives for the same file (checked against the JDK),
    and Kafka's kafka-configs --add-config splitting, with JSON kept whole."""
    path = tmp_path / "escapes.properties"
    path.write_bytes(
        b"a=1\n"
        b"  b : 2 \n"
        b"# c=3\n"
        b"! d=4\n"
        b"e=x\\\n   y\\\n\tz\n"
        b"f=ends\\\\\n"
        b"g=\\u0041\\t\\=\\:\\ \\#\n"
        b"h\\ k=v\n"
        b"i=a\\\\\\\nnext\n"
        b"j==x\n"
        b"k=\\uD83D\\uDE00\r\n"
        b"l=cr\rm=last\\"
    )
    assert read_properties(path) == {
        "a": "1",
        "b": "2",  # Java keeps the trailing blank; the tools drop unescaped ones
        "e": "xyz",
        "f": "ends\\",
        "g": "A\t=: #",
        "h k": "v",
        "i": "a\\next",
        "j": "=x",
        "k": "\U0001f600",
        "l": "cr",
        "m": "last",
    }
    path.write_text("# a comment ending in a backslash \\\nnot=continued\nspace=\\ \n")
    assert read_properties(path) == {"not": "continued", "space": " "}
    path.write_text("bad=\\u12\n")
    with pytest.raises(Exception, match="line 1 has a malformed"):
        read_properties(path)

    assert split_configs("a=[x,y],b=2,,c=") == {"a": "x,y", "b": "2", "c": ""}
    value = '{"groupFilters": [{"name": "a,b", "patternType": "LITERAL"}, {"name": "}]"}]}'
    assert split_configs(f"{GROUPS}={value},x=1") == {GROUPS: value, "x": "1"}
    assert split_configs(f"{GROUPS}=[{value}]") == {GROUPS: value}
