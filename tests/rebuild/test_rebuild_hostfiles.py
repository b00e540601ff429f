"""The build never reads the review machine's files: a source that names one does not build in
bwrap, a sandbox that shows them (unshare) builds only when the recipe accepts it, and the scan
reports the directive either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from buildcase import KERN_CU, Upstream, make_case, make_series, recipe_text, run_build

from auditor.model import StageStatus
from auditor.rebuild.sandbox import _probe

SECRET = "host-secret-3f9c2a7e51d04b8a"


def _incbin_kernel(path: Path) -> str:
    return KERN_CU + (
        '__asm__(".section .rodata\\n.global tiny_blob\\ntiny_blob:\\n'
        f'.incbin \\"{path}\\"\\n.previous");\n')


def _host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "review-machine" / "id_token"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    return secret


def test_the_incbin_really_copies_a_host_file_when_unsandboxed(upstream: Upstream, tmp_path):
    """Control: the same kernel, compiled on the host, carries the host file's bytes."""
    secret = _host_secret(tmp_path)
    cu = tmp_path / "k.cu"
    cu.write_text(_incbin_kernel(secret).replace('#include "common.cuh"\n',
                                                 "#define SCALE(a) (a)\n"))
    out = tmp_path / "k.o"
    subprocess.run(["nvcc", "-c", str(cu), "-o", str(out)], check=True, capture_output=True,
                   timeout=600)
    assert SECRET.encode() in out.read_bytes()


def test_bwrap_hides_the_host_file_so_the_module_does_not_build(upstream: Upstream, tmp_path):
    problem = _probe("bwrap", str(tmp_path))
    if problem is not None:
        pytest.skip(f"bwrap not usable here: {problem}")
    secret = _host_secret(tmp_path)
    branch = make_series(upstream, "incbin-bwrap", [{"csrc/kern.cu": _incbin_kernel(secret)}])
    recipe = recipe_text(upstream, extra='[sandbox]\nkind = "bwrap"\n')
    result = run_build(make_case(upstream, tmp_path / "case", branch, recipe=recipe))
    assert result.status is StageStatus.FAILED
    assert any(r.startswith("module kern:") for r in result.reasons), result.reasons
    assert result.to_json()["wheel"] is None
    for f in (tmp_path / "case").rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_bwrap_shows_no_user_database_of_the_host(upstream: Upstream, tmp_path):
    problem = _probe("bwrap", str(tmp_path))
    if problem is not None:
        pytest.skip(f"bwrap not usable here: {problem}")
    from auditor.rebuild.sandbox import BwrapSandbox

    res = BwrapSandbox().run(["cat", "/etc/passwd"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                             writable=[tmp_path])
    assert res.returncode == 0
    assert res.stdout.count("\n") == 1 and res.stdout.startswith("build:x:")
    assert Path("/etc/passwd").read_text() != res.stdout


def test_unshare_shows_host_files_so_the_build_is_incomplete_unless_accepted(
        upstream: Upstream, tmp_path):
    problem = _probe("unshare", str(tmp_path))
    if problem is not None:
        pytest.skip(f"unshare not usable here: {problem}")
    secret = _host_secret(tmp_path)
    branch = make_series(upstream, "incbin-unshare", [{"csrc/kern.cu": _incbin_kernel(secret)}])
    recipe = recipe_text(upstream, extra='[sandbox]\nkind = "unshare"\n')
    result = run_build(make_case(upstream, tmp_path / "case", branch, recipe=recipe))
    assert result.status is StageStatus.INCOMPLETE
    [why] = result.not_checked
    assert "unshare sandbox shows this machine's files" in why and "accept_host_files" in why
    assert result.to_json()["wheel"] is None
    # accepted by the recipe: it builds, and the host file is in the module, as the recipe allowed
    accepted = recipe_text(upstream, extra='[sandbox]\nkind = "unshare"\naccept_host_files = true\n')
    result = run_build(make_case(upstream, tmp_path / "case2", branch, recipe=accepted))
    assert result.status is not StageStatus.INCOMPLETE, result.not_checked
    assert result.to_json()["sandbox"]["filesystem"] == "host"


def test_the_scan_reports_a_host_file_directive_in_cuda(tmp_path):
    """The directive itself is a finding, whatever the sandbox: the scan reads .cu files."""
    from support import GitRepo, export_tree, simple_case, write_spec

    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c3 = repo.commit("kernel table", files={
        "csrc/kernel.cu": "__global__ void k(float* x) { x[0] = 1.0f; }\n"
                          '__asm__(".incbin \\"/root/.config/gh/hosts.yml\\"");\n'
                          '#include "/etc/machine-id"\n'},
        author="Fork Author <fork@community.example>")
    bundle = export_tree(repo, "series", tmp_path / "bundle-cu")
    spec = {**case["spec"], "bundle": {"path": str(bundle)}, "scan": {"scope": "diff"}}
    spec["patches"] = {"ref": "series", "commits": [*case["commits"], c3]}
    res = subprocess.run([sys.executable, "-m", "auditor", "scan",
                          str(write_spec(tmp_path / "audit.toml", spec)), "--json"],
                         capture_output=True, text=True, timeout=600)
    data = json.loads(res.stdout)
    rules = {(f["rule"], f["line"]) for f in data["findings"]
             if f["path"] == "csrc/kernel.cu"}
    assert ("secret-access.c.host-file-embedded", 2) in rules, data["findings"]
    assert ("secret-access.c.host-file-embedded", 3) in rules
