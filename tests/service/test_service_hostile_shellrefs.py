"""The key variable in an Exec*= line (issue 30 item 21): systemd's own expansion and a shell
that passes it to a command are keys on a command line; a ``$$`` literal that no shell expands,
and a shell that keeps the key inside builtins, are not."""

import pytest
from test_service_lint import GOOD, VLLM

from auditor.service.lint import lint_unit
from auditor.service.shell_refs import shell_argv_refs, systemd_refs
from auditor.service.unitfile import parse_unit

EXEC = "ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\\n    --host 127.0.0.1 --port 8000"
RULE = "service.key-on-command-line"


def _key_findings(exec_line):
    text = GOOD.replace(EXEC, exec_line)
    assert text != GOOD
    return [f for f in lint_unit(parse_unit(text, "x.service"), VLLM) if f.rule == RULE]


@pytest.mark.parametrize("exec_line", [
    # a literal: vLLM receives the text ${VLLM_API_KEY}, no shell expands it
    'ExecStart=/opt/vllm/bin/vllm serve m --host 127.0.0.1 --served-model-name "$${VLLM_API_KEY}"',
    'ExecStart=/opt/vllm/bin/vllm serve m --host 127.0.0.1 --chat-template-content-format '
    '$$VLLM_API_KEY',
    # the shell keeps it in builtins and the environment
    "ExecStart=/bin/sh -c 'read -r VLLM_API_KEY < \"$${CREDENTIALS_DIRECTORY}/k\"; "
    'test -n "$${VLLM_API_KEY}"; export VLLM_API_KEY; exec "$$@"\' x /opt/vllm/bin/vllm serve m '
    "--host 127.0.0.1",
    "ExecStart=/bin/bash -c 'VLLM_API_KEY=\"$${VLLM_API_KEY}\" exec vllm serve m --host 127.0.0.1'",
    "ExecStart=/bin/sh -c '[ -n \"$$VLLM_API_KEY\" ] || exit 1; exec vllm serve m --host ::1'",
])
def test_a_key_that_never_reaches_an_argv_is_not_flagged(exec_line):
    assert _key_findings(exec_line) == []


@pytest.mark.parametrize("exec_line", [
    "ExecStart=/opt/vllm/bin/vllm serve m --host 127.0.0.1 --served-model-name ${VLLM_API_KEY}",
    "ExecStart=/opt/vllm/bin/vllm serve m --host 127.0.0.1 x$VLLM_API_KEY",
    "ExecStart=/bin/sh -c 'exec vllm serve m --host 127.0.0.1 --served-model-name "
    "\"$${VLLM_API_KEY}\"'",
    "ExecStart=/bin/sh -c 'echo $$VLLM_API_KEY; exec vllm serve m --host 127.0.0.1'",
    "ExecStart=/usr/bin/env bash -ec 'vllm serve m --host 127.0.0.1 --x=$$HF_TOKEN'",
    "ExecStart=/bin/sh -c 'test -n x && curl -H \"$$VLLM_API_KEY\" http://h'",
    "ExecStart=/bin/sh -c 'vllm serve \"$$VLLM_API_KEY'",  # cannot be split: assume the worst
])
def test_a_key_that_reaches_an_argv_is_flagged(exec_line):
    hits = _key_findings(exec_line)
    assert len(hits) == 1 and hits[0].action.value == "block"


def test_systemd_refs_skip_the_escaped_dollar():
    assert systemd_refs("$${A}$B${C}$$D") == ["B", "C"]


def test_shell_refs_of_builtins_assignments_and_redirects():
    assert shell_argv_refs('X="$K" cmd; read -r K < "$F"; export K; test -n "$K"') == []
    assert shell_argv_refs('cmd "$K" | tee "$L"') == ["K", "L"]
    assert shell_argv_refs('exec "$@"') == []
    assert shell_argv_refs("'") is None
