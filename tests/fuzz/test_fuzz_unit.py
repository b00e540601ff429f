"""Fuzzing the systemd unit reader and linter (``auditor unit check``): any unit file gives
findings about that file or a typed error, never a crash."""

from __future__ import annotations

from fuzz_support import FUZZ, TRIED
from hypothesis import given
from hypothesis import strategies as st

from auditor.errors import AuditError
from auditor.service.lint import lint_unit
from auditor.service.unitfile import parse_unit
from auditor.spec import load_profile

SECTIONS = st.sampled_from(["[Unit]", "[Service]", "[Install]", "[Service", "[]", "[X-Y]", ""])
KEYS = st.sampled_from([
    "ExecStart", "ExecStartPre", "Environment", "EnvironmentFile", "User", "UMask", "Restart",
    "PrivateTmp", "ProtectSystem", "ReadWritePaths", "LoadCredential", "DeviceAllow",
    "CapabilityBoundingSet", "IPAddressDeny", "StateDirectory", "StateDirectoryMode", "ExecStartPost",
    "NoNewPrivileges", "SystemCallFilter", "", "Exec Start"])
VALUES = st.one_of(
    st.text(max_size=60),
    st.sampled_from([
        "/opt/vllm/bin/vllm serve /srv/m --host 0 --port 8000",
        "-/usr/bin/vllm serve m --host=[::] --api-key abc",
        "@/bin/sh sh -c 'vllm serve m --trust-remote-code'",
        '"VLLM_API_KEY=x" "LD_PRELOAD=/opt/x.so" PYTHONPATH=/opt/vllm',
        "vllm serve m --host 0x0 \\", "--host ::ffff:0.0.0.0 --chat-template /tmp/t.jinja",
        "0077", "yes", "strict", "%h/${HOME}/$$", "'unterminated", "\\x00", "\udcff"]))
LINES = st.lists(st.one_of(
    SECTIONS, st.tuples(KEYS, VALUES).map(lambda kv: f"{kv[0]}={kv[1]}"),
    st.sampled_from(["# comment", "; comment", "  ", "\\", "Environment=A=1 \\"])), max_size=25)

_PROFILE = load_profile("vllm")


@FUZZ
@given(LINES)
def test_unit_check_never_crashes(lines: list[str]) -> None:
    TRIED["unit files"] += 1
    text = "\n".join(lines)
    try:
        unit = parse_unit(text, "fuzz.service")
        findings = lint_unit(unit, _PROFILE)
    except AuditError:
        return  # a unit it refuses, with a message: fine
    assert all(f.path == "fuzz.service" for f in findings)
