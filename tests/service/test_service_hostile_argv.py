"""The server's command line read as the engine's argparse reads it (issue 30 item 12): the last
``--host`` wins, in every spelling the parser accepts, in the renderer and in the linter."""

import pytest
from support import simple_case, write_spec
from test_service_lint import GOOD, VLLM
from typer.testing import CliRunner
from unitcase import service

from auditor.cli import app
from auditor.errors import SpecError
from auditor.service.engine_args import command_uses, option_uses
from auditor.service.lint import lint_unit
from auditor.service.render import render_unit
from auditor.service.unitfile import parse_unit

runner = CliRunner()
LOOPBACK = dict(api_key_file=None, loopback_only=True)
HOST_LINE = "--host 127.0.0.1 --port 8000"


# ---- the parser model


@pytest.mark.parametrize(("argv", "value"), [
    (["--host", "127.0.0.1", "--host=0.0.0.0"], "0.0.0.0"),
    (["--host=0.0.0.0", "--host", "127.0.0.1"], "127.0.0.1"),
    (["--ho", "::"], "::"),
    (["--hos=0"], "0"),
    (["--h", "0"], "0"),  # ambiguous for argparse (an error), never read as "not the host"
    (["serve", "m", "--host", "::1", "--", "--host=0.0.0.0"], "::1"),
])
def test_the_last_host_in_any_spelling_wins(argv, value):
    assert option_uses(argv, ["--host"])[-1].value == value


@pytest.mark.parametrize("argv", [
    ["--host 0.0.0.0"],  # one word with a space: positional for argparse
    ["--hostname", "x"],  # not a prefix of --host
    ["-host", "0.0.0.0"],
    ["--", "--host", "0.0.0.0"],
    ["--port", "8000"],
])
def test_words_argparse_does_not_read_as_the_host(argv):
    assert option_uses(argv, ["--host"], known=["--port"]) == []


def test_an_exact_other_option_is_not_an_abbreviation():
    assert option_uses(["--ho", "x"], ["--host"], known=["--ho"]) == []


def test_underscores_are_dashes_to_vllm():
    uses = option_uses(["--api_key=sk-1", "--api_ke", "v"], ["--api-key"])
    assert [(u.option, u.value) for u in uses] == [("--api-key", "sk-1"), ("--api-key", "v")]


def test_a_shell_script_is_split_and_an_unsplittable_one_is_unknown():
    uses = command_uses(["/bin/sh", "-c", "vllm serve m --host=0.0.0.0 -- x"], ["--host"])
    assert uses is not None and uses[0].value == "0.0.0.0" and uses[0].in_shell
    assert command_uses(["/bin/bash", "-ec", "vllm serve 'm --host 1"], ["--host"]) is None


# ---- the renderer refuses what would override the unit's own options


@pytest.mark.parametrize("extra", [
    ("--host=0.0.0.0",), ("--host", "0.0.0.0"), ("--ho", "::"), ("--hos=0",),
    ("--port=9000",), ("--po", "1"), ("--config", "/etc/vllm/serve.yaml"), ("--conf=x.yaml",),
    ("--api_key", "k"), ("--api-ke=k",), ("--", "--host=0.0.0.0"),
    ("--served-model-name", "m", "--host=0.0.0.0"),
])
def test_render_refuses_extra_args_that_rebind_or_reconfigure(extra):
    with pytest.raises(SpecError) as exc:
        render_unit(service(**LOOPBACK, extra_args=extra), VLLM)
    index = next(i for i, a in enumerate(extra) if a.startswith("--") and a != "--"
                 and not a.startswith("--served"))
    assert f"service.extra_args[{index}]" in str(exc.value)


def test_render_keeps_harmless_extra_args():
    r = render_unit(service(**LOOPBACK, extra_args=("--max-model-len", "4096",
                                                    "--served-model-name", "qwen")), VLLM)
    assert "--max-model-len" in r.text


def test_render_cli_refuses_with_exit_2_and_writes_nothing(tmp_path):
    case = simple_case(tmp_path / "case")
    spec = {k: dict(v) for k, v in case["spec"].items()}
    spec["engine"]["profile"] = "vllm"
    spec["service"] = {"name": "vllm", "user": "vllm", "model": "/srv/models/qwen",
                       "loopback_only": True, "extra_args": ["--host=0.0.0.0"]}
    out = tmp_path / "vllm.service"
    res = runner.invoke(app, ["unit", "render", str(write_spec(tmp_path / "a.toml", spec)),
                              "-o", str(out)])
    assert res.exit_code == 2, res.stderr
    assert "extra_args[0]" in res.stderr and not out.exists()


# ---- the linter reads the unit's ExecStart= the same way


def _rules(unit_text):
    return {f.rule for f in lint_unit(parse_unit(unit_text, "x.service"), VLLM)}


@pytest.mark.parametrize("line", [
    "--host 127.0.0.1 --port 8000 --host=0.0.0.0",
    "--host 127.0.0.1 --port 8000 --ho 0.0.0.0",
    "--host 127.0.0.1 --port 8000 --hos=::",
    "--port 8000 --config /etc/vllm/serve.yaml",  # the file may set the host
    "--host 127.0.0.1 --port 8000 --host $${ADDR}",
])
def test_lint_sees_the_host_that_wins(line):
    assert "service.bind-all" in _rules(GOOD.replace(HOST_LINE, line))


@pytest.mark.parametrize("line", [
    "--host 0.0.0.0 --port 8000 --host 127.0.0.1",
    "--config /etc/vllm/serve.yaml --host 127.0.0.1 --port 8000",  # the command line wins
    "--host 127.0.0.1 --port 8000 -- --host=0.0.0.0",
])
def test_lint_does_not_flag_an_overridden_wide_host(line):
    assert "service.bind-all" not in _rules(GOOD.replace(HOST_LINE, line))


def test_lint_reads_a_reset_exec_start_and_a_shell_script():
    reset = GOOD.replace("ExecStart=/opt", "ExecStart=/opt/vllm/bin/vllm serve m --host 0.0.0.0\n"
                         "ExecStart=\nExecStart=/opt")
    assert "service.bind-all" not in _rules(reset)
    script = GOOD.replace("ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\\n    " + HOST_LINE,
                          "ExecStart=/bin/sh -c 'vllm serve m --host 127.0.0.1 || "
                          "vllm serve m --host=0.0.0.0'")
    assert script != GOOD and "service.bind-all" in _rules(script)


def test_rendered_loopback_unit_with_a_late_host_fails_the_lint():
    text = render_unit(service(**LOOPBACK), VLLM).text
    text = text.replace('"--port" "8000"', '"--port" "8000" "--host=0.0.0.0"', 1)
    assert "--host=0.0.0.0" in text
    rules = _rules(text)
    assert {"service.exposed-without-key", "service.bind-all"} <= rules


@pytest.mark.parametrize("flag", ["--api_key=abc123", "--api-ke abc123", "--api-k=abc123"])
def test_lint_sees_the_key_flag_in_other_spellings(flag):
    text = GOOD.replace(HOST_LINE, f"{HOST_LINE} {flag}")
    findings = lint_unit(parse_unit(text, "x.service"), VLLM)
    hit = [f for f in findings if f.rule == "service.key-on-command-line"]
    assert hit and "abc123" not in hit[0].snippet
