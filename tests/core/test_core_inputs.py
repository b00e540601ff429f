"""Every input is checked before it is read: FIFOs, devices, huge and deeply nested files are
refused fast with exit 2 naming them; nothing hangs, nothing is read whole, no traceback.

All through the real command (a subprocess with a timeout, so a hang fails the test instead of
blocking it), on real FIFOs (os.mkfifo), /dev/zero and sparse files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import simple_case, write_spec

from auditor.errors import InputError
from auditor.inputs import nesting_depth, read_input_bytes, read_input_text


def cli(*args: str, cwd: Path | None = None, timeout: float = 60,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "COLUMNS": "1000", **(env or {})})


def flat(text: str) -> str:
    return " ".join(text.split())


def assert_refused(res: subprocess.CompletedProcess[str], name: str, why: str) -> None:
    err = flat(res.stderr)
    assert res.returncode == 2, err
    assert "Traceback" not in res.stderr
    assert name in err.replace(" ", "") or name in err, err
    assert why in err, err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_fifo_and_device_as_spec(tmp_path, fifo):
    start = time.monotonic()
    assert_refused(cli("verify", str(fifo)), "pipe", "FIFO")
    assert_refused(cli("audit", "/dev/zero", "--out", str(tmp_path / "o")), "/dev/zero",
                   "character device")
    assert time.monotonic() - start < 30
    assert not (tmp_path / "o").exists()


def test_a_sparse_2gb_spec_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "audit.toml"
    with open(big, "wb") as fh:
        fh.truncate(2 << 30)
    start = time.monotonic()
    assert_refused(cli("verify", str(big)), "audit.toml", "more than the")
    assert time.monotonic() - start < 20


@pytest.mark.parametrize("bundle", ["fifo", "/dev/zero"])
def test_fifo_or_device_as_bundle(tmp_path, fifo, bundle):
    case = simple_case(tmp_path)
    path = str(fifo) if bundle == "fifo" else bundle
    spec = write_spec(tmp_path / "audit.toml", dict(case["spec"], bundle={"path": path}))
    res = cli("verify", str(spec), env={"TMPDIR": str(_private_tmp(tmp_path))})
    assert_refused(res, path, "not a regular file or a directory")
    assert list(_private_tmp(tmp_path).iterdir()) == []  # and no auditor-* folder leaks


def test_fifo_as_commits_file_policy_and_waivers(tmp_path, fifo):
    case = simple_case(tmp_path)
    spec = dict(case["spec"])
    spec["patches"] = {"ref": "series", "commits_file": str(fifo)}
    assert_refused(cli("verify", str(write_spec(tmp_path / "a.toml", spec))), "pipe", "FIFO")
    spec = dict(case["spec"], scan={"policy": str(fifo)})
    res = cli("scan", str(write_spec(tmp_path / "b.toml", spec)))
    assert_refused(res, "pipe", "FIFO")


def test_unit_check_report_and_gate_inputs(tmp_path, fifo):
    assert_refused(cli("unit", "check", str(fifo)), "pipe", "FIFO")
    assert_refused(cli("unit", "check", "/dev/zero"), "/dev/zero", "character device")
    assert_refused(cli("report", str(fifo)), "pipe", "FIFO")
    assert_refused(cli("report", "/dev/zero"), "/dev/zero", "character device")
    case = simple_case(tmp_path)
    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    res = cli("gate", str(spec), "--baseline", str(fifo), "--out", str(tmp_path / "g"))
    assert_refused(res, "pipe", "FIFO")
    assert not (tmp_path / "g").exists()


def test_deeply_nested_json_and_toml_are_input_errors(tmp_path):
    deep_json = tmp_path / "audit.json"
    deep_json.write_text("[" * 100_000)
    assert_refused(cli("report", str(deep_json)), "audit.json", "nested too deeply")
    deep_json.write_text("[" * 500 + "]" * 500)  # parses, but deeper than anything we read
    assert_refused(cli("report", str(deep_json)), "audit.json", "nested more than")
    case = simple_case(tmp_path)
    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    res = cli("gate", str(spec), "--baseline", str(deep_json), "--out", str(tmp_path / "g"))
    assert_refused(res, "audit.json", "nested")
    deep_toml = tmp_path / "deep.toml"
    deep_toml.write_text("a = " + "[" * 100_000)
    assert_refused(cli("verify", str(deep_toml)), "deep.toml", "nested too deeply")
    assert_refused(cli("unit", "check", str(deep_toml)), "deep.toml", "")  # not a unit: exit 2


def test_audit_json_with_fields_of_the_wrong_type(tmp_path):
    for doc in ({"schema": "auditor/audit/v1", "verdict": "PASS", "stages": [], "findings": 3},
                {"schema": "auditor/audit/v1", "verdict": 7, "stages": {"verify": "x"}},
                # found by fuzzing: a null among the reasons crashed the Markdown view
                {"schema": "auditor/audit/v1", "verdict": "PASS", "reasons": [None], "stages": {}},
                {"schema": "auditor/audit/v1", "verdict": "PASS", "stages": {
                    "verify": {"status": "ok", "findings": [{"rule": "r", "line": True}]}}},
                [1, 2, 3], "text"):
        path = tmp_path / "audit.json"
        path.write_text(json.dumps(doc))
        for fmt in ("md", "sarif"):
            res = cli("report", str(path), "--format", fmt)
            assert res.returncode == 2, (doc, fmt, res.stderr)
            assert "Traceback" not in res.stderr


def test_checked_reads_in_process(tmp_path, fifo):
    small = tmp_path / "s.txt"
    small.write_text("héllo")
    assert read_input_text(small, "thing") == "héllo"
    with pytest.raises(InputError, match="more than the 3 bytes"):
        read_input_bytes(small, "thing", 3)
    with pytest.raises(InputError, match="FIFO"):
        read_input_bytes(fifo, "thing", 10)
    with pytest.raises(InputError, match="is a directory"):
        read_input_bytes(tmp_path, "thing", 10)
    with pytest.raises(FileNotFoundError):  # a missing input is both an InputError and this
        read_input_bytes(tmp_path / "nope", "thing", 10)
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8"):
        read_input_text(tmp_path / "bin", "thing")
    assert nesting_depth({"a": [[1], {"b": []}]}) == 4
    assert nesting_depth("flat") == 0


def _private_tmp(tmp_path: Path) -> Path:
    p = tmp_path / "private-tmp"
    p.mkdir(exist_ok=True)
    return p
