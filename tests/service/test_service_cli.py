"""`auditor unit render` and `auditor unit check` through the CLI, with their exit codes."""

import json
import stat

import pytest
from support import simple_case, write_spec
from typer.testing import CliRunner
from unitcase import HAS_ANALYZE, needs_analyze

from auditor.cli import app
from auditor.service.unitfile import parse_unit

runner = CliRunner()


def _err(res):
    return " ".join(res.stderr.split())  # rich wraps long lines


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return simple_case(tmp_path_factory.mktemp("unit-cli"))


def _spec(tmp_path, case, **service):
    spec = {k: dict(v) for k, v in case["spec"].items()}
    spec["engine"]["profile"] = "vllm"
    spec["service"] = {"name": "vllm", "user": "vllm", "model": "/srv/models/qwen", **service}
    return write_spec(tmp_path / "audit.toml", spec)


def test_render_writes_the_unit_and_its_env_example(tmp_path, case):
    spec = _spec(tmp_path, case, api_key_file="/etc/vllm/vllm.env")
    out = tmp_path / "deploy" / "vllm.service"
    out.parent.mkdir()
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", str(out), "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == (0 if HAS_ANALYZE else 3), res.stderr
    assert data["unit"] == "vllm.service" and data["env_example"] == "vllm.env.example"
    assert data["findings"] == []
    if HAS_ANALYZE:
        assert data["status"] == "ok" and data["exposure"]["score"] <= 2.0
        assert data["verify"]["ok"] is True
    else:
        assert data["status"] == "incomplete" and data["exposure"] is None
    env = out.with_name("vllm.env.example")
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert "VLLM_API_KEY=" in env.read_text()
    unit = parse_unit(out.read_text(), "vllm.service")
    assert unit.last("Service", "EnvironmentFile").value == "/etc/vllm/vllm.env"


def test_render_refuses_a_spec_without_a_key(tmp_path, case):
    spec = _spec(tmp_path, case)
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", str(tmp_path / "u.service")])
    assert res.exit_code == 2
    assert "[service.api_key_file]" in _err(res) and "refused" in _err(res)
    assert not (tmp_path / "u.service").exists()


def test_render_allows_no_key_when_loopback_only(tmp_path, case):
    spec = _spec(tmp_path, case, loopback_only=True)
    out = tmp_path / "u.service"
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", str(out)])
    assert res.exit_code == (0 if HAS_ANALYZE else 3), res.stderr
    assert out.exists() and (tmp_path / "u.env.example").exists()


@pytest.mark.parametrize(("key", "value"), [
    ("model", "/srv/m\\nExecStartPre=/bin/sh -c evil\\n[Install]"),
    ("model", "/srv/m\\u0000x"),
    ("user", "vllm\\r"),
    ("host", "127.0.0.1\\u202e"),
])
def test_render_refuses_a_control_character_in_a_service_value(tmp_path, case, key, value):
    spec = _spec(tmp_path, case, api_key_file="/etc/vllm/vllm.env")
    text = spec.read_text()
    text = text.replace(f'{key} = "', f'{key} = "{value}', 1) if f"{key} = " in text else \
        text + f'{key} = "{value}"\n'
    spec.write_text(text)
    out = tmp_path / "u.service"
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", str(out)])
    assert res.exit_code == 2, res.stderr
    assert f"[service.{key}]" in _err(res) and "control character" in _err(res)
    assert not out.exists()


def test_render_to_stdout_but_never_into_a_folder(tmp_path, case):
    spec = _spec(tmp_path, case, api_key_file="/etc/vllm/vllm.env")
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", "-"])
    assert res.exit_code == (0 if HAS_ANALYZE else 3), res.stderr
    assert parse_unit(res.stdout, "vllm.service").last("Service", "User").value == "vllm"
    folder = tmp_path / "units"
    folder.mkdir()
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", str(folder)])  # issue 30 item 14
    assert res.exit_code == 2 and "is a directory" in _err(res)
    assert list(folder.iterdir()) == []


def test_render_names_a_missing_output_directory(tmp_path, case):
    spec = _spec(tmp_path, case, api_key_file="/etc/vllm/vllm.env")
    res = runner.invoke(app, ["unit", "render", str(spec), "-o", str(tmp_path / "no" / "u")])
    assert res.exit_code == 2 and "does not exist" in _err(res)


BAD = """\
[Service]
User=root
ExecStart=/opt/vllm/bin/vllm serve /srv/m --host 0.0.0.0 --api-key sk-abcdefghijklmnopqrstu
"""


@needs_analyze
def test_check_exits_1_on_a_blocking_finding_and_0_on_the_rendered_unit(tmp_path, case):
    bad = tmp_path / "bad.service"
    bad.write_text(BAD)
    res = runner.invoke(app, ["unit", "check", str(bad), "--json"])
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    rules = {f["rule"] for f in data["findings"]}
    assert {"service.key-on-command-line", "service.root-user", "service.exposure-score"} <= rules
    assert "abcdefghijklmnopqrstu" not in res.stderr  # the key is redacted on the terminal
    spec = _spec(tmp_path, case, api_key_credential="/etc/credstore/vllm.key")
    good = tmp_path / "vllm.service"
    assert runner.invoke(app, ["unit", "render", str(spec), "-o", str(good)]).exit_code == 0
    res = runner.invoke(app, ["unit", "check", str(good)])
    assert res.exit_code == 0, res.stderr


def test_check_exits_3_when_systemd_analyze_is_missing(tmp_path, monkeypatch):
    good = tmp_path / "x.service"
    good.write_text("[Service]\nUser=vllm\nExecStart=/bin/true --host 127.0.0.1\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    res = runner.invoke(app, ["unit", "check", str(good), "--json"])
    data = json.loads(res.stdout)
    assert data["status"] == "incomplete" and data["exposure"] is None
    # review findings exist, but "could not check" decides: fail closed, exit 3
    assert res.exit_code == 3


@pytest.mark.parametrize("args, message", [
    (["unit", "check", "/nonexistent/x.service"], "no such file"),
    (["unit", "check", "{tmp}", "--profile", "vllm"], "is a directory"),
    (["unit", "check", "{unit}", "--profile", "nope"], "unknown engine profile"),
])
def test_check_usage_errors_exit_2(tmp_path, args, message):
    unit = tmp_path / "x.service"
    unit.write_text("[Service]\nExecStart=/bin/true\n")
    args = [a.format(tmp=tmp_path, unit=unit) for a in args]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and message in _err(res)
