"""A saved audit.json that JSON readers read differently is refused (issue 30 item 22): a key
twice in any object (the verdict, a finding's action, a stage's status), or NaN/Infinity."""

import json
import re

import pytest
from reportcases import rich_audit
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import InputError
from auditor.results.audit_file import load_audit

runner = CliRunner()


def _saved_text() -> str:
    return json.dumps(rich_audit().to_json(), indent=1)


def _twice(text: str, key: str, value: str) -> str:
    """``text`` with a second ``key`` member (``value``) right after the first one."""
    m = re.search(rf'\n(\s*)"{key}": [^\n]*?(,?)\n', text)
    assert m, key
    indent, comma = m.group(1), m.group(2)
    line = m.group(0).rstrip("\n")
    if not comma:
        line += ","
    return text.replace(m.group(0), f"{line}\n{indent}\"{key}\": {value}{comma}\n", 1)


@pytest.mark.parametrize(("key", "value"), [
    ("verdict", '"PASS"'),  # the last one wins in Python: FAIL would read as PASS
    ("action", '"info"'),  # a blocking finding's action
    ("status", '"ok"'),  # a stage's status
    ("waived", "true"),
    ("schema", '"auditor/audit/v1"'),  # even the same value twice
])
def test_a_duplicate_key_is_refused(tmp_path, key, value):
    path = tmp_path / "audit.json"
    text = _twice(_saved_text(), key, value)
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_audit(path)
    assert f"'{key}' appears twice" in str(exc.value) and str(path) in str(exc.value)
    res = runner.invoke(app, ["report", str(path), "--format", "json"])
    assert res.exit_code == 2 and "appears twice" in res.stderr and res.stdout == ""


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_numbers_json_does_not_have_are_refused(tmp_path, constant):
    path = tmp_path / "audit.json"
    doc = rich_audit().to_json()
    doc["tool"]["x"] = 1
    path.write_text(json.dumps(doc).replace('"x": 1', f'"x": {constant}'))
    with pytest.raises(InputError, match="not a JSON number"):
        load_audit(path)


def test_a_long_hostile_duplicate_key_is_shown_short_and_inert(tmp_path):
    key = "\x1b[31m" + "k" * 500
    body = json.dumps({"schema": "auditor/audit/v1"})[:-1]
    path = tmp_path / "audit.json"
    path.write_text(body + f", {json.dumps(key)}: 1, {json.dumps(key)}: 2}}")
    with pytest.raises(InputError) as exc:
        load_audit(path)
    message = str(exc.value)
    assert "\x1b" not in message and len(message) < 400


def test_the_unchanged_file_still_loads(tmp_path):
    path = tmp_path / "audit.json"
    path.write_text(_saved_text())
    assert load_audit(path).verdict == rich_audit().verdict
