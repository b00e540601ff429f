"""The unit-file reader and the escaping that writes spec values into units."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.errors import InputError, SpecError
from auditor.service.escape import absolute_path, env_assignment, exec_word, plain_value
from auditor.service.unitfile import (
    as_bool,
    commands,
    parse_unit,
    split_words,
    systemd_dollars,
    unspecify,
)

UNIT = """\
# a comment
; another comment
[Unit]
Description=demo

[Service]
ExecStart=/usr/bin/server \\
  --host 0.0.0.0 \\
# a comment inside the continued line is skipped
  --port 8000
Environment=A=1
Environment=
Environment="B=two words" C=3
User=nobody
User=svc
  UMask = 0077
"""


def test_sections_continuations_comments_and_repeated_keys():
    unit = parse_unit(UNIT, "demo.service")
    assert unit.sections == (("Unit", 3), ("Service", 6))
    start = unit.last("Service", "ExecStart")
    assert start is not None
    assert (start.line, start.end_line) == (7, 10)
    assert start.value.split() == ["/usr/bin/server", "--host", "0.0.0.0", "--port", "8000"]
    assert unit.last("Service", "User").value == "svc"  # the last one wins
    assert [d.value for d in unit.all("Service", "User")] == ["nobody", "svc"]
    # an empty assignment resets a list setting
    assert [d.line for d in unit.effective_list("Service", "Environment")] == [13]
    assert unit.last("Service", "UMask").value == "0077"
    assert unit.last("Service", "UMask").line == 16


def test_an_escaped_trailing_backslash_does_not_continue():
    unit = parse_unit("[Service]\nExecStart=/bin/echo a\\\\\nUser=x\n", "u.service")
    assert unit.last("Service", "User").line == 3


@pytest.mark.parametrize("text", ["User=x\n", "[Service\nUser=x\n", "[Service]\nno equals sign\n"])
def test_malformed_units_are_input_errors(text):
    with pytest.raises(InputError):
        parse_unit(text, "bad.service")


def test_split_words_follows_systemd_quoting():
    words = split_words(r'''/bin/x "a b" 'c d'e "\x41\n" plain\ word "\;" ;''')
    assert [w.text for w in words] == ["/bin/x", "a b", "c de", "A\n", "plain word", ";", ";"]
    assert words[-1].raw == ";" and words[-2].raw == '"\\;"'


def test_commands_split_on_lone_semicolons_and_strip_prefixes():
    unit = parse_unit('[Service]\nExecStartPre=-/bin/a 1 ; +/bin/b "2 %%"\n', "u.service")
    cmds = list(commands(unit))
    assert [c.argv for c in cmds] == [("/bin/a", "1"), ("/bin/b", "2 %")]
    assert cmds[1].head.raw == "/bin/b"


def test_helpers():
    assert unspecify("100%% of %h") == "100% of %h"
    assert systemd_dollars("$$HOME ${X}") == "$HOME ${X}"
    assert as_bool("Yes") is True and as_bool("off") is False and as_bool("strict") is None


# Any text (no NUL) written as a command word or environment value reads back unchanged, as one
# word of one directive: no newline, quote, %, $ or backslash can break out of it.
_text = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                max_size=40)


@settings(max_examples=300, deadline=None)
@given(_text)
def test_exec_word_round_trips(value):
    unit = parse_unit(f"[Service]\nExecStart=/bin/x {exec_word(value)}\nUser=u\n", "u.service")
    assert [d.key for d in unit.directives] == ["ExecStart", "User"]
    (cmd,) = commands(unit)
    assert len(cmd.argv) == 2
    assert systemd_dollars(cmd.argv[1]) == value


@settings(max_examples=200, deadline=None)
@given(_text)
def test_env_assignment_round_trips(value):
    unit = parse_unit(f"[Service]\nEnvironment={env_assignment('X', value)}\nUser=u\n",
                      "u.service")
    assert [d.key for d in unit.directives] == ["Environment", "User"]
    (word,) = split_words(unit.directives[0].value)
    assert unspecify(word.text) == f"X={value}"


@pytest.mark.parametrize("value", ["/etc/a b", "/etc/a\nUser=root", "/etc/\"q\"", "/e\\x", ""])
def test_plain_values_refuse_what_cannot_be_written_bare(value):
    with pytest.raises(SpecError, match=r"\[service.x\]"):
        plain_value(value, key="service.x")


def test_plain_values_double_percent_and_paths_must_be_absolute():
    assert plain_value("/etc/100%", key="k") == "/etc/100%%"
    with pytest.raises(SpecError, match="absolute"):
        absolute_path("etc/key", key="service.api_key_file")
    with pytest.raises(SpecError, match="absolute"):
        absolute_path("/etc/../root/key", key="service.api_key_file")
