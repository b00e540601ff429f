"""The real systemd-analyze on rendered and hand-written units: score parsed, threshold enforced."""

import pytest
from unitcase import needs_analyze, service

from auditor.model import StageStatus
from auditor.service import analyze
from auditor.service.render import render_unit
from auditor.service.stage import Rendered, check_unit
from auditor.service.unitfile import parse_unit
from auditor.spec import load_profile

VLLM = load_profile("vllm")
LLAMA = load_profile("llama.cpp")

BARE = """\
[Unit]
Description=the way people usually start it

[Service]
ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen --host 0.0.0.0 --api-key sk-abcdefghijklmnopqrstu
Bogus=1
"""


@needs_analyze
@pytest.mark.parametrize("spec, profile", [
    (service(), VLLM),
    (service(api_key_file=None, api_key_credential="/etc/credstore/vllm.key"), VLLM),
    (service(name="llama", model="/srv/m.gguf", exec_path="/opt/llama/bin/llama-server",
             api_key_file=None, api_key_credential="/etc/credstore/llama.key"), LLAMA),
    (service(gpu="intel", host="10.0.0.5", client_networks=("10.0.0.0/24",)), VLLM),
], ids=["vllm-envfile", "vllm-credential", "llama-credential", "vllm-intel-network"])
def test_rendered_units_verify_clean_and_score_at_most_2(tmp_path, spec, profile):
    r = render_unit(spec, profile)
    unit = parse_unit(r.text, r.unit_name)
    result = check_unit(unit, profile, tmp_path, Rendered(r.unit_name))
    assert result.status is StageStatus.OK, result.not_checked
    assert result.to_json()["verify"] == {"ok": True, "warnings": []}
    score = result.to_json()["exposure"]["score"]
    assert isinstance(score, float) and 0.0 <= score <= analyze.EXPOSURE_THRESHOLD
    assert result.to_json()["exposure"]["label"] == "OK"
    assert result.findings == ()


@needs_analyze
def test_a_bare_unit_scores_high_and_verify_warnings_keep_their_line(tmp_path):
    unit = parse_unit(BARE, "bare.service")
    result = check_unit(unit, VLLM, tmp_path, Rendered("unit"))
    assert result.to_json()["exposure"]["score"] > 9.0
    assert result.to_json()["exposure"]["label"] == "UNSAFE"
    by_rule = {f.rule: f for f in result.findings}
    assert "service.exposure-score" in by_rule
    assert "9." in by_rule["service.exposure-score"].message
    verify = by_rule["service.verify"]
    assert verify.line == 6 and "Bogus" in verify.message
    assert result.to_json()["verify"]["ok"] is False
    assert by_rule["service.key-on-command-line"].line == 5


@needs_analyze
def test_the_checkable_copy_keeps_line_numbers_and_swaps_only_executables(tmp_path):
    text = "[Service]\nExecStart=-/opt/x/server \\\n  --flag\nExecStartPre=/a ; /b c\nBogus=1\n"
    unit = parse_unit(text, "multi.service")
    copy = analyze.checkable_copy(unit, tmp_path)
    lines = copy.read_text().splitlines()
    assert len(lines) == 5 and lines[4] == "Bogus=1"
    stub = str(tmp_path / "stub-exec")
    assert lines[1].split() == [f"ExecStart=-{stub}", "--flag"] and lines[2] == ""
    assert lines[3] == f"ExecStartPre={stub} ; {stub} c"
    res = analyze.verify(copy, "multi.service")
    assert [(w.line, "Bogus" in w.message) for w in res.warnings] == [(5, True)]


def test_without_systemd_analyze_the_check_is_incomplete_and_lint_still_runs(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    unit = parse_unit(BARE, "bare.service")
    result = check_unit(unit, VLLM, tmp_path / "work", Rendered("unit"))
    assert result.status is StageStatus.INCOMPLETE
    assert len(result.not_checked) == 2
    assert all("not installed" in n for n in result.not_checked)
    assert result.to_json()["exposure"] is None and result.to_json()["verify"] is None
    assert "service.key-on-command-line" in {f.rule for f in result.findings}
